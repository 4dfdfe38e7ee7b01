import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_posattn")
class UnfoldSentences(keras.layers.Layer):
    """Restores the document axis: (batch * S, ...) -> (batch, S, ...).

    The inverse of ``FoldSentences``: per-sentence results (one vector per
    sentence, or per word) go back into their documents. The number of
    sentences S is read from ``reference``, any tensor whose first two axes
    are (batch, S) - typically the token ids (batch, S, W).

    Call arguments:
        inputs: tensor (batch * S, ...).
        reference: tensor (batch, S, ...).

    Example:

    >>> import numpy as np
    >>> from keras_posattn.layers import UnfoldSentences
    >>> ids = np.zeros((2, 3, 5), "int32")
    >>> tuple(UnfoldSentences()(np.zeros((6, 8)), ids).shape)
    (2, 3, 8)
    """

    def call(self, inputs, reference):
        shape = ops.shape(reference)
        return ops.reshape(inputs, (shape[0], shape[1], *ops.shape(inputs)[1:]))

    def compute_mask(self, inputs, reference=None, mask=None):
        return None

    def compute_output_shape(self, inputs_shape, reference_shape):
        return (reference_shape[0], reference_shape[1], *inputs_shape[1:])
