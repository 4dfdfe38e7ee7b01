import keras
import numpy as np
from keras import ops

from keras_posattn.layers.added_positions import AddedPositions

LAYOUTS = ("interleaved", "concatenated")


@keras.saving.register_keras_serializable(package="keras_posattn")
class SinusoidalPositionEncoding(AddedPositions):
    """Adds the Transformer's fixed sine/cosine encoding of each position to the inputs.

    SPE-CNN's input (Oh and Kim, "Lightweight Text Classifier using
    Sinusoidal Positional Encoding", section 3: x'_i = x_i + PE(i)) with
    Vaswani et al.'s encoding (section 3.5 of "Attention Is All You Need"),
    for position ``pos`` (0-based), width ``d`` and frequencies
    ``w_i = max_wavelength^(-2i / d)``:

        out[b, pos] = inputs[b, pos] + scale * PE(pos)     at real positions
        out[b, pos] = 0                                     at padding

    - ``layout="interleaved"`` (Vaswani et al.'s formula):
      ``PE(pos, 2i) = sin(pos w_i)``, ``PE(pos, 2i + 1) = cos(pos w_i)``.
      keras-hub's ``SinePositionEncoding`` uses this layout (even channels
      sine, odd channels cosine), and returns the encoding alone rather than
      adding it.
    - ``layout="concatenated"``: the same ``d`` values, all sines first:
      ``PE(pos, i) = sin(pos w_i)`` for ``i < ceil(d / 2)``, then
      ``PE(pos, ceil(d / 2) + i) = cos(pos w_i)`` for ``i < floor(d / 2)``.
      It is a fixed permutation of the interleaved channels, so for an odd
      ``d`` both end with one more sine than cosine.

    Choices where the paper is silent: SPE-CNN does not say which layout it
    uses (both offered; interleaved, the formula's, is the default), nor how
    the encoding is weighted against the embeddings (``scale``, default 1:
    plain addition). Position ``pos`` is the index in the tensor, so
    sequences are expected to be right-padded. The encoding is computed in
    float32 and cast to the compute dtype. The layer has no weights, and no
    maximum length.

    Args:
        max_wavelength: the base of the frequencies (paper: 10000).
        layout: ``"interleaved"`` or ``"concatenated"``.
        scale: factor on the encoding before it is added.

    Call arguments:
        inputs: float tensor (batch, n, d).
        mask: Keras padding mask (batch, n), True at real tokens.

    Example:

    >>> import numpy as np
    >>> from keras_posattn.layers import SinusoidalPositionEncoding
    >>> x = np.zeros((1, 3, 4), "float32")
    >>> pe = np.asarray(SinusoidalPositionEncoding()(x), "float64")
    >>> np.round(pe[0, 1], 3).tolist()
    [0.841, 0.54, 0.01, 1.0]
    """

    def __init__(self, max_wavelength=10000, layout="interleaved", scale=1.0, **kwargs):
        super().__init__(**kwargs)
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}.")
        self.max_wavelength = float(max_wavelength)
        if self.max_wavelength <= 0:
            raise ValueError(f"max_wavelength must be positive, got {max_wavelength}.")
        self.layout = layout
        self.scale = float(scale)

    def _channels(self, dim):
        """Per channel: the frequency w_i (float32) and whether it is a sine."""
        channel = np.arange(dim)
        if self.layout == "interleaved":
            index, is_sine = channel // 2, channel % 2 == 0
        else:
            sines = (dim + 1) // 2
            is_sine = channel < sines
            index = np.where(is_sine, channel, channel - sines)
        frequency = self.max_wavelength ** (-2.0 * index / dim)
        return frequency.astype("float32"), is_sine

    def encoding(self, length, dim):
        """PE as a float32 (length, dim) tensor (without ``scale``)."""
        frequency, is_sine = self._channels(dim)
        angles = ops.expand_dims(ops.arange(length, dtype="float32"), 1) * frequency
        return ops.where(is_sine, ops.sin(angles), ops.cos(angles))

    def _positions(self, length, dim):
        return self.scale * self.encoding(length, dim)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "max_wavelength": self.max_wavelength,
                "layout": self.layout,
                "scale": self.scale,
            }
        )
        return config
