"""Bi-LSTM from stock Keras, for ``keras_posattn.models.bilstm``.

Ours is already stock Keras but for the embedding and the pool; the
reference is the same model as a Keras user writes it: a stock
``Embedding``, ``Dropout``, ``Bidirectional(LSTM(units,
return_sequences=True))`` fed the padding mask, max pooling over the real
positions (``ops.where`` with a large negative, then ``ops.max``),
``Dropout``, [``Dense(head_units, ReLU)``, ``Dropout``], logits. Every config
value is supported.
"""

import keras
from keras import ops

from . import copy_embedding
from . import copy_head
from . import copy_layer
from . import embedding
from . import head
from . import masked_max
from . import register
from . import token_input


@register("bilstm")
def build(config):
    c = dict(config)

    ids = token_input()
    padding = ops.not_equal(ids, 0)
    x = keras.layers.Dropout(c["dropout"], name="embedding_dropout")(embedding(c)(ids))
    h = keras.layers.Bidirectional(
        keras.layers.LSTM(c["units"], return_sequences=True), merge_mode="concat", name="bilstm",
    )(x, mask=padding)
    logits = head(masked_max(h, padding), c["num_classes"], c["head_units"], "relu",
                  c["dropout"])
    reference = keras.Model(ids, logits, name=f"reference_{c.get('name', 'bilstm')}")

    def transfer(ours, ref):
        copy_embedding(ours, ref)
        copy_layer(ours.get_layer("bilstm"), ref.get_layer("bilstm"))
        copy_head(ours, ref)

    return reference, transfer
