import keras
from keras import ops

METHODS = ("max", "average")


@keras.saving.register_keras_serializable(package="keras_posattn")
class MaskedGlobalPooling1D(keras.layers.Layer):
    """Global max or average pooling over the real (unpadded) positions only.

    ``method="max"``: the feature-wise maximum over real positions (padding
    never wins, whatever its values). ``method="average"``: their mean.
    An all-padding sequence (an empty text) pools to zeros - never NaN, where
    stock ``GlobalAveragePooling1D`` divides 0 by 0 and
    ``GlobalMaxPooling1D`` ignores the mask.

    Args:
        method: ``"max"`` or ``"average"``.

    Call arguments:
        inputs: float tensor (batch, n, d).
        mask: Keras padding mask (batch, n), True at real positions.

    Example:

    >>> import numpy as np
    >>> from keras_posattn.layers import MaskedGlobalPooling1D
    >>> x = np.arange(12, dtype="float32").reshape(1, 4, 3)
    >>> MaskedGlobalPooling1D("max")(x, mask=np.array([[1, 1, 0, 0]], bool)).tolist()
    [[3.0, 4.0, 5.0]]
    """

    def __init__(self, method="max", **kwargs):
        super().__init__(**kwargs)
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}.")
        self.method = method
        self.supports_masking = True

    def call(self, inputs, mask=None):
        if mask is None:
            mask = ops.ones(ops.shape(inputs)[:2], dtype="bool")
        real = ops.expand_dims(ops.cast(mask, "bool"), -1)  # (b, n, 1)
        any_real = ops.any(real, axis=1)  # (b, 1)
        if self.method == "max":
            lowest = ops.cast(_lowest(inputs.dtype), inputs.dtype)
            pooled = ops.max(ops.where(real, inputs, lowest), axis=1)
            return ops.where(any_real, pooled, ops.zeros_like(pooled))
        weights = ops.cast(real, inputs.dtype)
        total = ops.sum(inputs * weights, axis=1)
        count = ops.maximum(ops.sum(weights, axis=1), ops.cast(1.0, inputs.dtype))
        return total / count

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[-1])

    def get_config(self):
        config = super().get_config()
        config["method"] = self.method
        return config


def _lowest(dtype):
    """The most negative finite value of a float dtype (no -inf: NaN-safe)."""
    import numpy as np

    name = keras.backend.standardize_dtype(dtype)
    if name == "bfloat16":
        return -3.38e38
    return float(np.finfo(name).min)
