import keras
from keras import ops

from keras_posattn.attention_ops import zero_padding
from keras_posattn.layers.masked_global_pooling1d import _lowest


@keras.saving.register_keras_serializable(package="keras_posattn")
class MaskedMaxPooling1D(keras.layers.Layer):
    """Downsampling max pooling that downsamples the padding mask too.

    Windows of ``pool_size`` positions start at 0, ``strides``, 2 ``strides``...
    and the sequence is padded on the right only, so a window never depends on
    how much padding follows the text (stock ``padding="same"`` pooling pads
    on both sides and shifts every window when the padded length changes).
    A window's output is the maximum over its real positions only; the output
    mask is "the window holds at least one real position"; padded outputs are
    zero. The output has ``ceil(n / strides)`` positions, and a text of ``L``
    real tokens keeps ``ceil(L / strides)`` real ones (for ``pool_size >=
    strides``): a one-token text pools to itself.

    EPN's pyramid blocks use pool 2, stride 2 (the length halves); DPCNN
    downsamples with pool 3, stride 2.

    Args:
        pool_size: window length.
        strides: step between windows (default ``pool_size``).

    Call arguments:
        inputs: float tensor (batch, n, d).
        mask: Keras padding mask (batch, n), True at real positions.

    Example:

    >>> import numpy as np
    >>> from keras_posattn.layers import MaskedMaxPooling1D
    >>> x = np.arange(5, dtype="float32").reshape(1, 5, 1)
    >>> mask = np.array([[True, True, True, False, False]])
    >>> MaskedMaxPooling1D(2)(x, mask=mask)[0, :, 0].numpy().tolist()
    [1.0, 2.0, 0.0]
    """

    def __init__(self, pool_size=2, strides=None, **kwargs):
        super().__init__(**kwargs)
        self.pool_size = int(pool_size)
        self.strides = int(strides or pool_size)
        if self.pool_size < 1 or self.strides < 1:
            raise ValueError(f"pool_size and strides must be >= 1, got {pool_size}, {strides}.")
        if self.strides > self.pool_size:
            raise ValueError(
                f"strides ({self.strides}) > pool_size ({self.pool_size}) would skip positions."
            )
        self.supports_masking = True

    def _window_max(self, x, fill):
        """``out[:, t] = max(x[:, t s], ..., x[:, t s + pool_size - 1])`` with
        ``fill`` past the end: ``ceil(n / strides)`` windows starting at 0,
        strides, 2 strides... The sequence is padded on the right by
        ``pool_size - 1`` and max-pooled with stock "valid" pooling, which gives
        exactly those windows (``floor((n - 1) / strides) + 1``); a rank-2
        ``x`` (a mask) is pooled as one channel. Stock pooling's gradient is
        one MaxPoolGrad, where per-offset slices cost a StridedSliceGrad each
        (BENCHMARKS.md, "Speed against stock Keras")."""
        squeeze = len(x.shape) == 2
        if squeeze:
            x = ops.expand_dims(x, -1)
        padded = ops.pad(x, [(0, 0), (0, self.pool_size - 1), (0, 0)], constant_values=fill)
        pooled = ops.max_pool(padded, self.pool_size, strides=self.strides, padding="valid")
        return ops.squeeze(pooled, -1) if squeeze else pooled

    def call(self, inputs, mask=None):
        if mask is None:
            return self._window_max(inputs, _lowest(inputs.dtype))
        mask = ops.cast(mask, "bool")
        lowest = ops.cast(_lowest(inputs.dtype), inputs.dtype)
        filled = ops.where(ops.expand_dims(mask, -1), inputs, lowest)
        pooled = self._window_max(filled, lowest)
        return zero_padding(pooled, self.compute_mask(inputs, mask))

    def compute_mask(self, inputs, mask=None):
        if mask is None:
            return None
        return self._window_max(ops.cast(mask, "float32"), 0.0) > 0.5

    def compute_output_shape(self, input_shape):
        n = input_shape[1]
        out = None if n is None else (n + self.strides - 1) // self.strides
        return (input_shape[0], out, input_shape[-1])

    def get_config(self):
        config = super().get_config()
        config.update({"pool_size": self.pool_size, "strides": self.strides})
        return config
