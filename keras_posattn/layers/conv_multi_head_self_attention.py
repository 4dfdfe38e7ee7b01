import keras

from keras_posattn.attention_ops import multi_head_attention
from keras_posattn.attention_ops import self_attention_allowed
from keras_posattn.attention_ops import zero_padding
from keras_posattn.layers.conv_attention_options import ConvAttentionOptions

# The two parallel attentions of HCAN eq. (4): the activation of Q and K, and
# that of V. Branch "a" is a plain convolutional attention; branch "b"'s
# values go through tanh so that the elementwise product stays bounded.
BRANCHES = (("elu", "elu", "elu"), ("tanh", "elu", "tanh"))


@keras.saving.register_keras_serializable(package="keras_posattn")
class ConvMultiHeadSelfAttention(ConvAttentionOptions, keras.layers.Layer):
    """Two parallel convolutional multi-head self-attentions, multiplied and layer-normalised.

    HCAN's self-attention block (Gao et al., "Hierarchical Convolutional
    Attention Networks for Text Classification", sections 3.2-3.4, eqs. 2-4,
    and 3.7 for the layer normalisation):

        Q_a = ELU(Conv1D(E, W_qa) + b_qa), K_a = ELU(...), V_a = ELU(...)
        Q_b = ELU(Conv1D(E, W_qb) + b_qb), K_b = ELU(...),
        V_b = tanh(Conv1D(E, W_vb) + b_vb)
        MultiHead(Q, K, V) = [head_1, ..., head_h],
            head_i = softmax(Q_i K_i^T / sqrt(units / h)) V_i
        out = LayerNorm(MultiHead(Q_a, K_a, V_a) * MultiHead(Q_b, K_b, V_b))

    With ``parallel=False`` only the first attention runs (Table 2's "one
    self-attention" variants): ``out = LayerNorm(MultiHead(Q_a, K_a, V_a))``.

    Every convolution is a ``MaskedConv1D`` (window ``kernel_size``,
    ``"same"`` padding, ``units`` filters), so padding never enters a real
    position's window. The attention goes through
    ``attention_ops.multi_head_attention``: padding keys get zero weight,
    padding queries zero rows, and the softmax runs in float32. There is no
    residual connection and no feed-forward sublayer (the paper's Figure 1).

    Choices where the paper is silent or the released code differs:

    - The two attentions have their own Q and K convolutions (six in all):
      eq. (4) names W_qa, W_ka, W_qb, W_kb separately, and the released
      ``tf_hcan.py`` builds them separately too.
    - Each head's logits are scaled by ``sqrt(units / num_heads)``, the width
      of one head (eq. 1's ``d`` read per head, as Vaswani et al. and the
      released code do).
    - The layer normalisation is per position over features (the Transformer
      convention), with ``layer_norm_epsilon`` (default 1e-6). The released
      code calls ``tf.contrib.layers.layer_norm`` with its defaults, which
      normalise over positions and features together with epsilon 1e-12;
      that lets padding change real positions, so it is not offered.
      Padded positions are set back to zero after the normalisation.
    - Convolution kernels default to ``"orthogonal"``, as in the released
      code (section 3 gives no initialisation).
    - Dropout (section 3.7: 0.1) is applied to the attention weights of both
      attentions, as in the released code.

    Args:
        units: d, the filters of every convolution and the output width;
            divisible by ``num_heads`` (paper: 512).
        num_heads: h (paper: 8).
        kernel_size: the convolution window (paper: 3 words).
        parallel: two attentions multiplied (True, the full HCAN) or the
            ELU one alone (False).
        dropout: dropout rate on the attention weights (paper: 0.1).
        layer_norm_epsilon: epsilon of the final layer normalisation.
        kernel_initializer, bias_initializer, kernel_regularizer: for the six
            convolutions.

    Call arguments:
        inputs: float tensor (batch, n, d_in).
        mask: Keras padding mask (batch, n), True at real tokens.
        return_attention_scores: also return the attentions' weights,
            as ``(outputs, scores_elu, scores_tanh)`` (``(outputs,
            scores_elu)`` with ``parallel=False``), each float32
            (batch, num_heads, n, n) ``[.., query, key]``, taken before
            dropout.
        training: whether dropout is active.

    Example:

    >>> import numpy as np
    >>> from keras_posattn.layers import ConvMultiHeadSelfAttention
    >>> layer = ConvMultiHeadSelfAttention(units=16, num_heads=4)
    >>> e = np.random.rand(2, 7, 8).astype("float32")
    >>> out, scores_elu, scores_tanh = layer(e, return_attention_scores=True)
    >>> [tuple(t.shape) for t in (out, scores_elu, scores_tanh)]
    [(2, 7, 16), (2, 4, 7, 7), (2, 4, 7, 7)]
    """

    def __init__(
        self,
        units=512,
        num_heads=8,
        kernel_size=3,
        parallel=True,
        dropout=0.1,
        layer_norm_epsilon=1e-6,
        kernel_initializer="orthogonal",
        bias_initializer="zeros",
        kernel_regularizer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self._init_conv_attention(units, num_heads, kernel_size, dropout)
        self._init_weight_options(kernel_initializer, bias_initializer, kernel_regularizer)
        self.layer_norm_epsilon = float(layer_norm_epsilon)
        self.parallel = bool(parallel)

        # === Layers ===
        self._branches = [
            (
                self._masked_conv(f"query_{suffix}", qk_activation),
                self._masked_conv(f"key_{suffix}", qk_activation),
                self._masked_conv(f"value_{suffix}", v_activation),
            )
            for suffix, qk_activation, v_activation in BRANCHES[: 2 if self.parallel else 1]
        ]
        self._layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, name="layer_norm", dtype=self.dtype_policy
        )

    def build(self, input_shape):
        for convolutions in self._branches:
            for conv in convolutions:
                conv.build(input_shape)
        self._layer_norm.build((*input_shape[:-1], self.units))

    def call(self, inputs, mask=None, return_attention_scores=False, training=None):
        allowed, _ = self_attention_allowed(None, keras.ops.shape(inputs)[1], mask)
        weights_dropout = self._weights_dropout(training)
        outputs, scores = None, []
        for query_conv, key_conv, value_conv in self._branches:
            attended, weights = multi_head_attention(
                query_conv(inputs, mask=mask),
                key_conv(inputs, mask=mask),
                value_conv(inputs, mask=mask),
                self.num_heads,
                allowed=allowed,
                weights_dropout=weights_dropout,
            )
            outputs = attended if outputs is None else outputs * attended
            scores.append(weights)
        # LayerNorm maps a zero (padding) row to its beta: zero it again.
        outputs = zero_padding(self._layer_norm(outputs), mask)
        if return_attention_scores:
            return (outputs, *scores)
        return outputs

    def compute_mask(self, inputs, mask=None):
        return mask

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], self.units)

    def compute_output_spec(
        self, inputs, mask=None, return_attention_scores=False, training=None
    ):
        # compute_output_shape() cannot see return_attention_scores (see
        # MaskedSelfAttention): spell the symbolic outputs out here.
        batch, n = inputs.shape[0], inputs.shape[1]
        outputs = keras.KerasTensor((batch, n, self.units), dtype=self.compute_dtype)
        if not return_attention_scores:
            return outputs
        # One KerasTensor each: a functional model tells outputs apart by object.
        scores = [
            keras.KerasTensor((batch, self.num_heads, n, n), dtype="float32")
            for _ in self._branches
        ]
        return (outputs, *scores)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                **self._conv_attention_config(),
                "parallel": self.parallel,
                "layer_norm_epsilon": self.layer_norm_epsilon,
            }
        )
        return config
