import keras
import tensorflow as tf
from keras import ops

from keras_posattn.layers.added_positions import AddedPositions


@keras.saving.register_keras_serializable(package="keras_posattn")
class PositionEmbedding(AddedPositions):
    """Adds a learned embedding of each position to the inputs.

    HCAN's positional embeddings (Gao et al., "Hierarchical Convolutional
    Attention Networks for Text Classification", section 3.6): a table
    P in R^{max_length x d}, learned, added to the sequence before the
    self-attention,

        out[b, i] = inputs[b, i] + P[i]        at real positions i
        out[b, i] = 0                          at padding

    Position i is the index in the tensor, so sequences are expected to be
    right-padded (real tokens first), as the library's vectorizer pads them.
    Padded positions get no position and are set to zero; the Keras mask
    passes through.

    Choices where the paper is silent:

    - The initializer defaults to N(0, 0.1), as in the released
      ``tf_hcan.py`` (the paper says only "randomly initialized").
    - A sequence longer than ``max_length`` is an error, never a silent
      truncation or broadcast. With a static length the layer raises a
      ``ValueError`` naming ``max_length``; with a dynamic one (a
      ``tf.function`` with unknown length) a ``tf.debugging`` assertion
      raises ``InvalidArgumentError`` naming it. XLA ignores assertions:
      under ``jit_compile=True`` the call fails instead while compiling the
      slice of the table, with ``Expected size[0] in [0, max_length], but
      got n`` at the node ``.../slice_positions_up_to_max_length/Slice``.

    Args:
        max_length: the number of positions in the table (the longest
            sequence the layer accepts).
        initializer: initializer of the table; None means
            ``RandomNormal(mean=0, stddev=0.1)``.

    Call arguments:
        inputs: float tensor (batch, n, d), n <= max_length.
        mask: Keras padding mask (batch, n), True at real tokens.

    Example:

    >>> import numpy as np
    >>> from keras_posattn.layers import PositionEmbedding
    >>> layer = PositionEmbedding(max_length=10)
    >>> x = np.random.rand(2, 6, 4).astype("float32")
    >>> mask = np.array([[True] * 6, [True] * 2 + [False] * 4])
    >>> out = layer(x, mask=mask)
    >>> tuple(out.shape), float(np.abs(out[1, 2:]).max())
    ((2, 6, 4), 0.0)
    """

    def __init__(self, max_length, initializer=None, **kwargs):
        super().__init__(**kwargs)
        self.max_length = int(max_length)
        if self.max_length < 1:
            raise ValueError(f"max_length must be at least 1, got {max_length}.")
        if initializer is None:
            initializer = keras.initializers.RandomNormal(mean=0.0, stddev=0.1)
        self.initializer = keras.initializers.get(initializer)

    def _check_static_length(self, length):
        if length is not None and length > self.max_length:
            raise ValueError(
                f"{self.name}: the sequence has {length} positions, more than "
                f"max_length={self.max_length}. Truncate the inputs or build the "
                f"layer with a larger max_length."
            )

    def build(self, input_shape):
        self._check_static_length(input_shape[1])
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.max_length, input_shape[-1]),
            initializer=self.initializer,
        )

    def _positions(self, length, dim):
        if isinstance(length, int):
            self._check_static_length(length)
            checks = []
        else:
            checks = [
                tf.debugging.assert_less_equal(
                    length,
                    self.max_length,
                    message=(
                        f"{self.name}: the sequence has more positions than "
                        f"max_length={self.max_length}"
                    ),
                )
            ]
        with tf.control_dependencies(checks), tf.name_scope(
            "slice_positions_up_to_max_length"
        ):
            # A slice of explicit size, not table[:n]: a strided slice clamps
            # to max_length, and (max_length=1) could then broadcast silently
            # where XLA has dropped the assertion.
            return ops.slice(self.embeddings, (0, 0), (length, dim))

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "max_length": self.max_length,
                "initializer": keras.initializers.serialize(self.initializer),
            }
        )
        return config
