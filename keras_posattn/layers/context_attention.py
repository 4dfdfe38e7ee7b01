import keras
from keras import ops

from keras_posattn.attention_ops import masked_softmax
from keras_posattn.layers.weight_options import WeightOptions


@keras.saving.register_keras_serializable(package="keras_posattn")
class ContextAttention(WeightOptions, keras.layers.Layer):
    """Pools a sequence with attention against a learned context vector.

    The word and sentence attention of Hierarchical Attention Networks (Yang
    et al., NAACL 2016, eqs. 5-7 and 8-10):

        u_t = tanh(W h_t + b)
        alpha_t = exp(u_t . u_w) / sum_t' exp(u_t' . u_w)
        s = sum_t alpha_t h_t

    with ``W`` (d_in x units), ``b`` and the context vector ``u_w`` (units)
    learned. The softmax goes through ``attention_ops.masked_softmax``: only
    real positions get weight, and a sequence with no real position pools to
    a zero vector (zero gradients, never NaN).

    Yang et al. give neither initialisation nor regulariser; ``u_w`` is
    "randomly initialized" - here N(0, 0.05) by default. There is no
    scaling of the logits (unlike scaled dot-product attention).

    Args:
        units: width of ``u_t`` and of the context vector (HAN: 100, twice
            the GRU's 50 units).
        context_initializer: initializer of ``u_w``.
        kernel_initializer, bias_initializer, kernel_regularizer: for ``W``
            and ``b``.

    Call arguments:
        inputs: float tensor (batch, n, d_in).
        mask: bool (batch, n), True at real positions.
        return_attention_scores: also return the weights alpha, float32
            (batch, n).

    Example:

    >>> import numpy as np
    >>> from keras_posattn.layers import ContextAttention
    >>> layer = ContextAttention(units=4)
    >>> h = np.random.rand(2, 5, 6).astype("float32")
    >>> s, alpha = layer(h, mask=np.arange(5) < np.array([[5], [2]]), return_attention_scores=True)
    >>> tuple(s.shape), tuple(alpha.shape), float(np.sum(alpha[1, 2:]))
    ((2, 6), (2, 5), 0.0)
    """

    def __init__(
        self,
        units=100,
        context_initializer=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.units = int(units)
        if self.units < 1:
            raise ValueError(f"units must be >= 1, got {units}.")
        self.context_initializer = keras.initializers.get(
            context_initializer or keras.initializers.RandomNormal(stddev=0.05)
        )
        self._init_weight_options(kernel_initializer, bias_initializer, kernel_regularizer)
        self.supports_masking = True

    def build(self, input_shape):
        self.kernel = self.add_weight(
            name="kernel", shape=(input_shape[-1], self.units),
            initializer=self.kernel_initializer, regularizer=self.kernel_regularizer,
        )
        self.bias = self.add_weight(name="bias", shape=(self.units,),
                                    initializer=self.bias_initializer)
        self.context = self.add_weight(name="context", shape=(self.units,),
                                       initializer=self.context_initializer)

    def call(self, inputs, mask=None, return_attention_scores=False):
        hidden = ops.tanh(ops.matmul(inputs, self.kernel) + self.bias)
        logits = ops.matmul(hidden, ops.cast(self.context, hidden.dtype))  # (b, n)
        weights = masked_softmax(logits, mask, axis=-1)
        pooled = ops.sum(ops.cast(weights, inputs.dtype)[..., None] * inputs, axis=1)
        if return_attention_scores:
            return pooled, weights
        return pooled

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[-1])

    def compute_output_spec(self, inputs, mask=None, return_attention_scores=False):
        pooled = keras.KerasTensor(self.compute_output_shape(inputs.shape), dtype=self.compute_dtype)
        if not return_attention_scores:
            return pooled
        return pooled, keras.KerasTensor(inputs.shape[:2], dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "context_initializer": keras.initializers.serialize(self.context_initializer),
                **self._weight_options_config(),
            }
        )
        return config
