import keras

from keras_posattn.attention_ops import zero_padding
from keras_posattn.layers.masked_conv1d import MaskedConv1D
from keras_posattn.layers.weight_options import WeightOptions


@keras.saving.register_keras_serializable(package="keras_posattn")
class ResidualConvBlock(WeightOptions, keras.layers.Layer):
    """A pre-activation convolutional block with a shortcut: ``x + f(x)``.

    ``f`` is ``num_convs`` times (``activation`` then a mask-aware convolution
    of ``kernel_size``), "pre-activation" as He et al. 2016b and DPCNN
    (Johnson & Zhang 2017) use it: ``W sigma(x) + b`` at every convolution.
    EPN's convolutional block (section 2.3: two convolutions, kernel 3, 100
    maps) and DPCNN's block (250 maps) are this layer. Padding never enters a
    real position's window (``MaskedConv1D``) and padded outputs are zero; the
    mask passes through.

    Args:
        filters: feature maps of every convolution; the input must have as
            many channels (the shortcut adds them).
        kernel_size: the convolution window (paper: 3).
        num_convs: convolutions in ``f`` (paper: 2).
        activation: the pre-activation (paper: ReLU).
        kernel_initializer, bias_initializer, kernel_regularizer: for the
            convolutions.

    Call arguments:
        inputs: float tensor (batch, n, filters).
        mask: Keras padding mask (batch, n).

    Example:

    >>> import numpy as np
    >>> from keras_posattn.layers import ResidualConvBlock
    >>> ResidualConvBlock(8)(np.random.rand(2, 5, 8).astype("float32")).shape
    (2, 5, 8)
    """

    def __init__(
        self,
        filters,
        kernel_size=3,
        num_convs=2,
        activation="relu",
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self._init_weight_options(kernel_initializer, bias_initializer, kernel_regularizer)
        self.filters = int(filters)
        self.kernel_size = int(kernel_size)
        self.num_convs = int(num_convs)
        self.activation = keras.activations.get(activation)
        self.supports_masking = True
        self.convs = [
            MaskedConv1D(self.filters, self.kernel_size, padding="same", name=f"conv_{i}",
                         dtype=self.dtype_policy, **self._dense_options())
            for i in range(self.num_convs)
        ]

    def build(self, input_shape):
        if input_shape[-1] != self.filters:
            raise ValueError(
                f"ResidualConvBlock adds its input to f(input): the input needs {self.filters} "
                f"channels, got {input_shape[-1]}."
            )
        for conv in self.convs:
            conv.build((*input_shape[:-1], self.filters))

    def call(self, inputs, mask=None):
        x = inputs
        for conv in self.convs:
            x = conv(self.activation(x), mask=mask)
        return zero_padding(inputs + x, mask)

    def compute_mask(self, inputs, mask=None):
        return mask

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update({
            "filters": self.filters,
            "kernel_size": self.kernel_size,
            "num_convs": self.num_convs,
            "activation": keras.activations.serialize(self.activation),
            **self._weight_options_config(),
        })
        return config
