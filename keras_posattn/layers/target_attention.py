import keras
from keras import ops

from keras_posattn.attention_ops import key_allowed
from keras_posattn.attention_ops import multi_head_attention
from keras_posattn.layers.conv_attention_options import ConvAttentionOptions


@keras.saving.register_keras_serializable(package="keras_posattn")
class TargetAttention(ConvAttentionOptions, keras.layers.Layer):
    """Pools a sequence into one vector by multi-head attention from a learned target query.

    HCAN's convolutional multi-head target attention (Gao et al.,
    "Hierarchical Convolutional Attention Networks for Text Classification",
    section 3.5, eq. 5):

        K = ELU(Conv1D(E, W_k) + b_k)
        V = E                                   (project_values=False)
        V = ELU(Conv1D(E, W_v) + b_v)           (project_values=True)
        Target(E) = [head_1, ..., head_h],
            head_i = softmax(T_i K_i^T / sqrt(units / h)) V_i

    with one learned target vector ``T`` in R^{1 x units} as the only query.
    The keys' convolution is a ``MaskedConv1D`` (window ``kernel_size``,
    ``"same"`` padding); the attention goes through
    ``attention_ops.multi_head_attention`` with ``key_allowed``: only real
    positions get weight, and an all-padding sequence gives a zero vector
    (zero gradients, never NaN).

    Choices where the paper is silent or the released code differs:

    - Values: eq. (5) projects them (``V = ELU(Conv1D(E))``); the released
      ``tf_hcan.py`` uses the sequence itself. ``project_values=False``
      (default) follows the code; the output width is then the input's
      width d_in (which must be divisible by ``num_heads``), and ``units``
      is the width of T and K only. With ``project_values=True`` the output
      width is ``units``.
    - T is initialised ``"orthogonal"`` (a random unit vector), as in the
      released code; ``kernel_regularizer`` applies to the convolutions, not
      to T.
    - The logits are scaled per head by ``sqrt(units / num_heads)``, as in
      the released code.
    - Dropout (section 3.7: 0.1) is applied to the attention weights.
    - The attention scores are returned as (batch, num_heads, n): the single
      query's axis is dropped.

    Args:
        units: width of the target vector and of the keys; divisible by
            ``num_heads`` (paper: 512).
        num_heads: h (paper: 8).
        kernel_size: the convolution window (paper: 3).
        project_values: ``False``: V is the input (released code);
            ``True``: V = ELU(Conv1D(E)) (eq. 5 as printed).
        dropout: dropout rate on the attention weights (paper: 0.1).
        target_initializer: initializer of T.
        kernel_initializer, bias_initializer, kernel_regularizer: for the
            convolutions.

    Call arguments:
        inputs: float tensor (batch, n, d_in).
        mask: Keras padding mask (batch, n), True at real tokens.
        return_attention_scores: also return the weights, float32
            (batch, num_heads, n), taken before dropout.
        training: whether dropout is active.

    Example:

    >>> import numpy as np
    >>> from keras_posattn.layers import TargetAttention
    >>> layer = TargetAttention(units=16, num_heads=4)
    >>> e = np.random.rand(2, 7, 8).astype("float32")
    >>> mask = np.array([[True] * 7, [True] * 3 + [False] * 4])
    >>> pooled, scores = layer(e, mask=mask, return_attention_scores=True)
    >>> tuple(pooled.shape), tuple(scores.shape)
    ((2, 8), (2, 4, 7))
    """

    def __init__(
        self,
        units=512,
        num_heads=8,
        kernel_size=3,
        project_values=False,
        dropout=0.1,
        target_initializer="orthogonal",
        kernel_initializer="orthogonal",
        bias_initializer="zeros",
        kernel_regularizer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self._init_conv_attention(units, num_heads, kernel_size, dropout)
        self._init_weight_options(kernel_initializer, bias_initializer, kernel_regularizer)
        self.project_values = bool(project_values)
        self.target_initializer = keras.initializers.get(target_initializer)

        # === Layers ===
        self._key_conv = self._masked_conv("key", "elu")
        self._value_conv = self._masked_conv("value", "elu") if self.project_values else None

    def build(self, input_shape):
        if not self.project_values and input_shape[-1] % self.num_heads:
            raise ValueError(
                f"With project_values=False the values are the inputs: their width "
                f"{input_shape[-1]} must be divisible by num_heads={self.num_heads}."
            )
        self.target = self.add_weight(
            name="target", shape=(1, self.units), initializer=self.target_initializer
        )
        self._key_conv.build(input_shape)
        if self._value_conv is not None:
            self._value_conv.build(input_shape)

    def call(self, inputs, mask=None, return_attention_scores=False, training=None):
        keys = self._key_conv(inputs, mask=mask)
        # Padding values get exactly zero weight, so they need no zeroing.
        values = inputs if self._value_conv is None else self._value_conv(inputs, mask=mask)
        batch = ops.shape(inputs)[0]
        query = ops.broadcast_to(
            ops.expand_dims(ops.cast(self.target, keys.dtype), 0), (batch, 1, self.units)
        )
        pooled, weights = multi_head_attention(
            query,
            keys,
            values,
            self.num_heads,
            allowed=None if mask is None else key_allowed(mask),
            weights_dropout=self._weights_dropout(training),
        )
        pooled, weights = pooled[:, 0], weights[:, :, 0]
        if return_attention_scores:
            return pooled, weights
        return pooled

    def compute_mask(self, inputs, mask=None):
        return None

    def _output_width(self, input_shape):
        return self.units if self.project_values else input_shape[-1]

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self._output_width(input_shape))

    def compute_output_spec(
        self, inputs, mask=None, return_attention_scores=False, training=None
    ):
        # compute_output_shape() cannot see return_attention_scores (see
        # MaskedSelfAttention): spell the symbolic outputs out here.
        batch, n = inputs.shape[0], inputs.shape[1]
        pooled = keras.KerasTensor(
            (batch, self._output_width(inputs.shape)), dtype=self.compute_dtype
        )
        if not return_attention_scores:
            return pooled
        return pooled, keras.KerasTensor((batch, self.num_heads, n), dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                **self._conv_attention_config(),
                "project_values": self.project_values,
                "target_initializer": keras.initializers.serialize(self.target_initializer),
            }
        )
        return config
