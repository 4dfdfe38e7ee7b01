"""SPE-CNN (Oh & Kim, AACL-IJCNLP 2020) from stock Keras, for ``keras_posattn.models.spe_cnn``.

The same function as the zoo's ``SPECNN``: a stock ``Embedding`` (frozen
unless ``trainable_embeddings`` trains it), plus the sinusoidal encoding
(``SinusoidalEncoding`` below: ``PE(pos, 2i) = sin(pos w_i)``, ``PE(pos,
2i + 1) = cos(pos w_i)`` with ``w_i = max_wavelength^(-2i / d)``, interleaved
or all sines first, computed for the batch's n on every call, as keras-hub's
``SinePositionEncoding`` does), padded positions set to zero, stock
``Conv1D(filters, kernel_size, padding="same")``, stock
``LayerNormalization``, max pooling over the real positions (``ops.where``
with a large negative, then ``ops.max``) and stock ``GlobalAveragePooling1D``
with the padding mask, concatenated, ``Dropout``, ``Dense(classes)``. L2 on
the convolution and classifier kernels as ours. Every config value is
supported (``position_encoding="none"``: no encoding).
"""

import keras
import numpy as np
from keras import ops

from . import copy_embedding
from . import copy_head
from . import copy_layer
from . import embedding
from . import head
from . import l2_factory
from . import masked_max
from . import register
from . import token_input
from . import zero_padded


class SinusoidalEncoding(keras.layers.Layer):
    """``x + PE`` for positions 0..n-1 of the batch (no weights)."""

    def __init__(self, max_wavelength=10000.0, layout="interleaved", **kwargs):
        super().__init__(**kwargs)
        self.max_wavelength = float(max_wavelength)
        self.layout = layout

    def call(self, x):
        dim = x.shape[-1]
        channel = np.arange(dim)
        if self.layout == "interleaved":
            index, is_sine = channel // 2, channel % 2 == 0
        else:  # concatenated: ceil(d / 2) sines, then the cosines
            sines = (dim + 1) // 2
            is_sine = channel < sines
            index = np.where(is_sine, channel, channel - sines)
        frequency = (self.max_wavelength ** (-2.0 * index / dim)).astype("float32")
        angles = ops.expand_dims(ops.arange(ops.shape(x)[1], dtype="float32"), 1) * frequency
        return x + ops.where(is_sine, ops.sin(angles), ops.cos(angles))


@register("spe_cnn")
def build(config):
    c = dict(config)
    regularizer = l2_factory(c["l2"])

    ids = token_input()
    padding = ops.not_equal(ids, 0)
    x = embedding(c)(ids)
    if c["position_encoding"] != "none":
        x = SinusoidalEncoding(c["max_wavelength"], c["position_encoding"],
                               name="position_encoding")(x)
    x = zero_padded(x, padding)
    h = keras.layers.Conv1D(c["filters"], c["kernel_size"], padding="same",
                            activation=c["conv_activation"], kernel_regularizer=regularizer(),
                            name="conv")(x)
    h = keras.layers.LayerNormalization(epsilon=c["layer_norm_epsilon"], name="feature_norm")(h)
    z = keras.layers.Concatenate(name="pooled")([
        masked_max(h, padding),
        keras.layers.GlobalAveragePooling1D(name="average_pool")(h, mask=padding),
    ])
    logits = head(z, c["num_classes"], dropout=c["dropout"], regularizer=regularizer)
    reference = keras.Model(ids, logits, name=f"reference_{c.get('name', 'spe_cnn')}")

    def transfer(ours, ref):
        copy_embedding(ours, ref)
        copy_layer(ours.get_layer("conv"), ref.get_layer("conv"))
        copy_layer(ours.get_layer("feature_norm"), ref.get_layer("feature_norm"))
        copy_head(ours, ref)

    return reference, transfer
