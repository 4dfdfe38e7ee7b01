import keras
from keras import ops

from keras_posattn.attention_ops import zero_padding
from keras_posattn.layers.weight_options import WeightOptions


@keras.saving.register_keras_serializable(package="keras_posattn")
class FusionGate(WeightOptions, keras.layers.Layer):
    """DiSAN's fusion gate between an attention output and its input.

    ``F = sigmoid(W_1 s + W_2 h + b)``, ``u = F * h + (1 - F) * s`` (Shen et
    al. 2018, DiSAN, eq. 19), with ``W_1, W_2`` in R^{d x d}. MPSAN's Table 3
    compares it with ``PositionFusion`` ("FG" against "TPW").

    Args:
        kernel_initializer, bias_initializer, kernel_regularizer: for W, b.

    Call arguments:
        inputs: ``[s, h]``, two float tensors (batch, n, d).
        mask: Keras padding mask(s); padding positions output zeros.

    Example:

    >>> import numpy as np
    >>> from keras_posattn.layers import FusionGate
    >>> s, h = (np.random.rand(2, 5, 8).astype("float32") for _ in range(2))
    >>> FusionGate()([s, h]).shape
    (2, 5, 8)
    """

    def __init__(
        self,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self._init_weight_options(kernel_initializer, bias_initializer, kernel_regularizer)
        self.supports_masking = True

    def build(self, input_shape):
        s_shape, h_shape = input_shape
        dim = h_shape[-1]
        self.attention_kernel = self.add_weight(
            name="attention_kernel",
            shape=(s_shape[-1], dim),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
        )
        self.input_kernel = self.add_weight(
            name="input_kernel",
            shape=(dim, dim),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
        )
        self.bias = self.add_weight(
            name="bias", shape=(dim,), initializer=self.bias_initializer
        )

    def call(self, inputs, mask=None):
        s, h = inputs
        gate = ops.sigmoid(
            ops.matmul(s, self.attention_kernel)
            + ops.matmul(h, self.input_kernel)
            + self.bias
        )
        outputs = gate * h + (1.0 - gate) * s
        padding = mask[-1] if isinstance(mask, (list, tuple)) else mask
        return zero_padding(outputs, padding)

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)):
            return mask[-1]
        return mask

    def compute_output_shape(self, input_shape):
        return input_shape[-1]

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                **self._weight_options_config(),
            }
        )
        return config
