"""ShallowCNN (Johnson & Zhang 2015, EPN's baseline) from stock Keras, for
``keras_posattn.models.shallow_cnn``.

The same function as the zoo's ``ShallowCNN``: a stock ``Embedding``, padded
positions set to zero, one stock ``Conv1D(filters, kernel_size,
padding="same", activation)``, max pooling over the real positions
(``ops.where`` with a large negative, then ``ops.max``), ``Dropout``, logits.
L2 on both kernels as ours. Every config value is supported.
"""

import keras
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


@register("shallow_cnn")
def build(config):
    c = dict(config)
    regularizer = l2_factory(c["l2"])

    ids = token_input()
    padding = ops.not_equal(ids, 0)
    x = zero_padded(embedding(c)(ids), padding)
    h = keras.layers.Conv1D(c["filters"], c["kernel_size"], padding="same",
                            activation=c["activation"], kernel_regularizer=regularizer(),
                            name="conv")(x)
    logits = head(masked_max(h, padding), c["num_classes"], dropout=c["dropout"],
                  regularizer=regularizer)
    reference = keras.Model(ids, logits, name=f"reference_{c.get('name', 'shallow_cnn')}")

    def transfer(ours, ref):
        copy_embedding(ours, ref)
        copy_layer(ours.get_layer("conv"), ref.get_layer("conv"))
        copy_head(ours, ref)

    return reference, transfer
