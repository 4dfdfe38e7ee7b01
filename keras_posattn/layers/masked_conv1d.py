import keras

from keras_posattn.attention_ops import zero_padding


@keras.saving.register_keras_serializable(package="keras_posattn")
class MaskedConv1D(keras.layers.Conv1D):
    """A ``Conv1D`` that respects the Keras padding mask and passes it on.

    Stock ``Conv1D`` drops Keras masks and lets padded positions leak into
    real ones through its window. This layer zeroes padded positions before
    the convolution (so a window that reaches past the last real token sees
    zeros, exactly as ``padding="same"`` does at the end of an unpadded
    sequence), zeroes them again after it (the bias and the activation would
    make them non-zero), and returns the same mask. The output at every real
    position is therefore the output of the unpadded sequence, however much
    padding follows it.

    Takes every argument of ``keras.layers.Conv1D``; ``strides`` must be 1 and
    ``padding`` ``"same"`` or ``"causal"`` so that outputs stay aligned with
    the mask (downsample with ``MaskedMaxPooling1D``).

    Example:

    >>> import numpy as np
    >>> from keras_posattn.layers import MaskedConv1D
    >>> x = np.random.rand(2, 6, 4).astype("float32")
    >>> mask = np.array([[1] * 6, [1] * 3 + [0] * 3], bool)
    >>> MaskedConv1D(8, 3, padding="same")(x, mask=mask).shape
    (2, 6, 8)
    """

    def __init__(self, filters, kernel_size, **kwargs):
        kwargs.setdefault("padding", "same")
        super().__init__(filters, kernel_size, **kwargs)
        if tuple(self.strides) != (1,):
            raise ValueError(
                f"MaskedConv1D needs strides=1 to keep outputs aligned with the mask, "
                f"got {self.strides}; downsample with MaskedMaxPooling1D."
            )
        if self.padding not in ("same", "causal"):
            raise ValueError(
                f"MaskedConv1D needs padding='same' or 'causal', got {self.padding!r}."
            )
        if self.data_format != "channels_last":
            raise ValueError("MaskedConv1D supports data_format='channels_last' only.")
        self.supports_masking = True

    def call(self, inputs, mask=None):
        outputs = super().call(zero_padding(inputs, mask))
        return zero_padding(outputs, mask)

    def compute_mask(self, inputs, mask=None):
        return mask
