"""The base of the layers that add a position table to a sequence.

``PositionEmbedding`` (learned) and ``SinusoidalPositionEncoding`` (fixed)
differ only in where the table comes from. Both add row ``i`` of it to
position ``i`` of a right-padded sequence, give padding no position (padded
outputs are zero), and pass the Keras mask on; that rule lives here once.
"""

import keras
from keras import ops

from keras_posattn.attention_ops import zero_padding


class AddedPositions(keras.layers.Layer):
    """Base layer: ``out[b, i] = inputs[b, i] + table[i]`` at real positions, 0 at padding.

    Subclasses implement ``_positions(length, dim)``, returning the table's
    first ``length`` rows as a float (length, dim) tensor.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def _positions(self, length, dim):
        raise NotImplementedError

    def call(self, inputs, mask=None):
        positions = self._positions(ops.shape(inputs)[1], inputs.shape[-1])
        outputs = inputs + ops.cast(ops.expand_dims(positions, 0), inputs.dtype)
        return zero_padding(outputs, mask)

    def compute_mask(self, inputs, mask=None):
        return mask

    def compute_output_shape(self, input_shape):
        return input_shape
