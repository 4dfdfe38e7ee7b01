import keras
from keras import ops

from keras_posattn.attention_ops import multi_head_attention
from keras_posattn.attention_ops import self_attention_allowed
from keras_posattn.attention_ops import zero_padding
from keras_posattn.layers.weight_options import WeightOptions


@keras.saving.register_keras_serializable(package="keras_posattn")
class MultiHeadSelfAttention(WeightOptions, keras.layers.Layer):
    """Multi-head scaled dot-product self-attention over the real tokens.

    Vaswani et al.'s attention as EPN uses it in its pyramid blocks (section
    2.3, eqs. 4-6): ``head_i = softmax(Q W_i^Q (K W_i^K)^T / sqrt(d / h)) V W_i^V``,
    ``MultiHead = Concat(head_1..head_h) W^O``, with queries, keys and values
    all the input sequence. The weights go through the library's masking core
    (``attention_ops.multi_head_attention``): padding keys get zero weight,
    padding queries give zero rows, the softmax runs in float32.

    EPN: d = 100 (``units``), h = 10. The paper scales by ``sqrt(d)`` in eq. 4
    and gives each head d/h dimensions; the scale here is ``sqrt(d / h)``, the
    width of one head, as Vaswani et al. do.

    Args:
        num_heads: h.
        units: width of the projections and of the output (default: the input
            width); divisible by ``num_heads``.
        dropout: dropout rate on the attention weights.
        use_bias: biases in the four projections.
        kernel_initializer, bias_initializer, kernel_regularizer: for them.

    Call arguments:
        inputs: float tensor (batch, n, d).
        mask: Keras padding mask (batch, n).
        return_attention_scores: also return the weights (batch, h, n, n).

    Example:

    >>> import numpy as np
    >>> from keras_posattn.layers import MultiHeadSelfAttention
    >>> layer = MultiHeadSelfAttention(num_heads=4)
    >>> out, w = layer(np.random.rand(2, 6, 8).astype("float32"), return_attention_scores=True)
    >>> tuple(out.shape), tuple(w.shape)
    ((2, 6, 8), (2, 4, 6, 6))
    """

    def __init__(
        self,
        num_heads,
        units=None,
        dropout=0.0,
        use_bias=True,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self._init_weight_options(kernel_initializer, bias_initializer, kernel_regularizer)
        self.num_heads = int(num_heads)
        self.units = None if units is None else int(units)
        self.dropout = float(dropout)
        self.use_bias = bool(use_bias)
        self.supports_masking = True
        self._dropout_layer = keras.layers.Dropout(self.dropout)

    def build(self, input_shape):
        units = self.units or input_shape[-1]
        if units % self.num_heads:
            raise ValueError(f"units={units} is not divisible by num_heads={self.num_heads}.")
        def dense(name, input_width):
            layer = keras.layers.Dense(units, use_bias=self.use_bias, name=name,
                                       dtype=self.dtype_policy, **self._dense_options())
            layer.build((*input_shape[:-1], input_width))
            return layer

        self.query = dense("query", input_shape[-1])
        self.key = dense("key", input_shape[-1])
        self.value = dense("value", input_shape[-1])
        self.output_dense = dense("output", units)

    def call(self, inputs, mask=None, return_attention_scores=False, training=None):
        allowed, _ = self_attention_allowed(None, ops.shape(inputs)[1], mask)
        attended, weights = multi_head_attention(
            self.query(inputs), self.key(inputs), self.value(inputs), self.num_heads,
            allowed=allowed,
            weights_dropout=lambda w: self._dropout_layer(w, training=training),
        )
        outputs = zero_padding(self.output_dense(attended), mask)
        if return_attention_scores:
            return outputs, weights
        return outputs

    def compute_mask(self, inputs, mask=None):
        return mask

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], self.units or input_shape[-1])

    def compute_output_spec(self, inputs, mask=None, return_attention_scores=False, training=None):
        outputs = keras.KerasTensor(self.compute_output_shape(inputs.shape), dtype=self.compute_dtype)
        if not return_attention_scores:
            return outputs
        batch, n = inputs.shape[0], inputs.shape[1]
        return outputs, keras.KerasTensor((batch, self.num_heads, n, n), dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update({
            "num_heads": self.num_heads,
            "units": self.units,
            "dropout": self.dropout,
            "use_bias": self.use_bias,
            **self._weight_options_config(),
        })
        return config
