import keras
from keras import ops

from keras_posattn.attention_ops import key_allowed
from keras_posattn.attention_ops import masked_softmax
from keras_posattn.layers.weight_options import WeightOptions

FUSIONS = ("concat", "mean")


@keras.saving.register_keras_serializable(package="keras_posattn")
class MultiQueryAttention(WeightOptions, keras.layers.Layer):
    """Pools a sequence with m learned queries that share one scoring MLP.

    CSPAN's multi-query soft attention (Jiang et al. 2020, section 2.3,
    eqs. 10-13)::

        u_t = tanh(W_h F_t + b_h)                  # one MLP, shared by the queries
        alpha_i = softmax_t(u_t^T Q_i)             # over real tokens only
        F_i = sum_t alpha_it F_t                    # i = 1..m
        F = Concat(F_1, ..., F_m) W_f               # W_f in R^{md x d}, no bias

    ``num_queries`` (m) is the knob the tuner searches (paper: 16 base, 128
    big). The weights go through the library's masking core; an empty text
    pools to zeros.

    The paper contrasts the O(md + d^2) space of its attention (queries and
    one shared W_h) with the O(md^2) of m heads with their own projections.
    Its own fusion matrix W_f (md x d) is O(md^2) again; ``fusion="concat"``
    is that, the paper's default. ``fusion="mean"`` averages the m pooled
    vectors and applies a d x d W_f, so the whole layer really is
    O(md + d^2): m d + (d^2 + d) + d^2 parameters against
    m d + (d^2 + d) + m d^2. Eq. 13 has no bias after W_f (``use_bias``
    adds one). The queries start from
    ``query_initializer`` (default Glorot uniform: the paper says "randomly
    initialized").

    Args:
        num_queries: m.
        fusion: ``"concat"`` (paper) or ``"mean"``.
        activation: of the scoring MLP (paper: tanh).
        use_bias: a bias after W_f (paper: none).
        query_initializer: for the m x d query matrix.
        kernel_initializer, bias_initializer, kernel_regularizer: for W_h, W_f.

    Call arguments:
        inputs: float tensor (batch, n, d).
        mask: Keras padding mask (batch, n).
        return_attention_scores: also return alpha, (batch, m, n).

    Example:

    >>> import numpy as np
    >>> from keras_posattn.layers import MultiQueryAttention
    >>> pooled, alpha = MultiQueryAttention(4)(np.random.rand(2, 6, 8).astype("float32"),
    ...                                        return_attention_scores=True)
    >>> tuple(pooled.shape), tuple(alpha.shape)
    ((2, 8), (2, 4, 6))
    """

    def __init__(
        self,
        num_queries=16,
        fusion="concat",
        activation="tanh",
        use_bias=False,
        query_initializer="glorot_uniform",
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self._init_weight_options(kernel_initializer, bias_initializer, kernel_regularizer)
        self.num_queries = int(num_queries)
        if self.num_queries < 1:
            raise ValueError(f"num_queries must be >= 1, got {num_queries}.")
        if fusion not in FUSIONS:
            raise ValueError(f"fusion must be one of {FUSIONS}, got {fusion!r}.")
        self.fusion = fusion
        self.activation = keras.activations.get(activation)
        self.use_bias = bool(use_bias)
        self.query_initializer = keras.initializers.get(query_initializer)
        self.supports_masking = True

    def build(self, input_shape):
        d = input_shape[-1]
        self.hidden_kernel = self.add_weight(name="hidden_kernel", shape=(d, d),
                                             initializer=self.kernel_initializer,
                                             regularizer=self.kernel_regularizer)
        self.hidden_bias = self.add_weight(name="hidden_bias", shape=(d,),
                                           initializer=self.bias_initializer)
        self.queries = self.add_weight(name="queries", shape=(self.num_queries, d),
                                       initializer=self.query_initializer)
        width = self.num_queries * d if self.fusion == "concat" else d
        self.fusion_kernel = self.add_weight(name="fusion_kernel", shape=(width, d),
                                             initializer=self.kernel_initializer,
                                             regularizer=self.kernel_regularizer)
        self.fusion_bias = None
        if self.use_bias:
            self.fusion_bias = self.add_weight(name="fusion_bias", shape=(d,),
                                               initializer=self.bias_initializer)

    def call(self, inputs, mask=None, return_attention_scores=False):
        u = self.activation(ops.matmul(inputs, self.hidden_kernel) + self.hidden_bias)  # (b, n, d)
        logits = ops.einsum("bnd,md->bmn", u, ops.cast(self.queries, u.dtype))
        allowed = None if mask is None else key_allowed(mask, self.num_queries)
        alpha = masked_softmax(logits, allowed, axis=-1)  # (b, m, n), float32
        pooled = ops.matmul(ops.cast(alpha, inputs.dtype), inputs)  # (b, m, d)
        if self.fusion == "concat":
            b = ops.shape(inputs)[0]
            pooled = ops.reshape(pooled, (b, self.num_queries * inputs.shape[-1]))
        else:
            pooled = ops.mean(pooled, axis=1)
        outputs = ops.matmul(pooled, self.fusion_kernel)
        if self.fusion_bias is not None:
            outputs = outputs + self.fusion_bias
        if return_attention_scores:
            return outputs, alpha
        return outputs

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[-1])

    def compute_output_spec(self, inputs, mask=None, return_attention_scores=False):
        outputs = keras.KerasTensor(self.compute_output_shape(inputs.shape), dtype=self.compute_dtype)
        if not return_attention_scores:
            return outputs
        return outputs, keras.KerasTensor((inputs.shape[0], self.num_queries, inputs.shape[1]),
                                          dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update({
            "num_queries": self.num_queries,
            "fusion": self.fusion,
            "activation": keras.activations.serialize(self.activation),
            "use_bias": self.use_bias,
            "query_initializer": keras.initializers.serialize(self.query_initializer),
            **self._weight_options_config(),
        })
        return config
