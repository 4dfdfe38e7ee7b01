import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_posattn")
class FoldSentences(keras.layers.Layer):
    """Merges the document and sentence axes: (batch, S, W, ...) -> (batch * S, W, ...).

    The word level of a hierarchical model (HCAN, HAN) encodes every sentence
    of every document the same way; folding the sentences into the batch lets
    any sequence layer do it in one call, with the word padding mask folded
    alike (``FoldSentences()(mask)``). ``UnfoldSentences`` restores the
    document axis of the per-sentence results. Shapes are read at run time,
    so documents and sentences may have any padded size.

    It is a plain reshape: padding sentences stay in the batch (their words
    are all masked, so the masked layers of the library give them zero
    outputs). No weights; the Keras mask is not propagated (pass the folded
    mask explicitly).

    Call arguments:
        inputs: tensor of rank >= 3 (batch, S, W, ...).

    Example:

    >>> import numpy as np
    >>> from keras_posattn.layers import FoldSentences
    >>> tuple(FoldSentences()(np.zeros((2, 3, 5, 4))).shape)
    (6, 5, 4)
    """

    def call(self, inputs):
        shape = ops.shape(inputs)
        return ops.reshape(inputs, (-1, *shape[2:]))

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        if len(input_shape) < 3:
            raise ValueError(f"FoldSentences expects (batch, sentences, words, ...), got {input_shape}.")
        batch, sentences = input_shape[0], input_shape[1]
        merged = batch * sentences if batch is not None and sentences is not None else None
        return (merged, *input_shape[2:])
