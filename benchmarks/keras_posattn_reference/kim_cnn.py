"""Kim's CNN (EMNLP 2014) from stock Keras, for ``keras_posattn.models.kim_cnn``.

The same function as the zoo's ``KimCNN``: a stock ``Embedding``, padded
positions set to zero, one stock ``Conv1D(filters, k, padding="same",
activation)`` per window ``k``, each max-pooled over the real positions
(``ops.where`` with a large negative, then ``ops.max``: stock
``GlobalMaxPooling1D`` ignores the mask), concatenated, ``Dropout``, and the
logits ``Dense`` with ``MaxNorm(logits_max_norm, axis=0)`` on its kernel.
Every config value is supported.
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
from . import zero_padded


@register("kim_cnn")
def build(config):
    c = dict(config)
    kernel_sizes = [int(k) for k in c["kernel_sizes"]]

    ids = token_input()
    padding = ops.not_equal(ids, 0)
    x = zero_padded(embedding(c)(ids), padding)
    pooled = [
        masked_max(keras.layers.Conv1D(c["filters"], k, padding="same",
                                       activation=c["conv_activation"], name=f"conv{k}")(x),
                   padding)
        for k in kernel_sizes
    ]
    z = pooled[0] if len(pooled) == 1 else keras.layers.Concatenate(name="pooled")(pooled)
    logits = head(z, c["num_classes"], dropout=c["dropout"],
                  logits_max_norm=c.get("logits_max_norm") or None)
    reference = keras.Model(ids, logits, name=f"reference_{c.get('name', 'kim_cnn')}")

    def transfer(ours, ref):
        copy_embedding(ours, ref)
        for k in kernel_sizes:
            copy_layer(ours.get_layer(f"conv{k}"), ref.get_layer(f"conv{k}"))
        copy_head(ours, ref)

    return reference, transfer
