"""Transformer encoder from stock Keras, for ``keras_posattn.models.transformer``.

Ours is already stock Keras but for the embedding and the pool; the
reference is the same encoder as a Keras user writes it: a stock
``Embedding`` plus a learned position ``Embedding`` over positions
0..n-1 (``cumsum`` of ones), ``Dropout``, ``num_layers`` post-norm blocks
``LayerNorm(x + Dropout(MultiHeadAttention(x, x, attention_mask)))``,
``LayerNorm(x + Dropout(Dense(Dense(x, ReLU))))`` with the dense
``attention_mask[b, i, j] = real[b, i] and real[b, j]``, stock
``GlobalAveragePooling1D`` with the padding mask, ``Dropout``, logits. Every
config value is supported.
"""

import keras
from keras import ops

from . import copy_embedding
from . import copy_head
from . import copy_layer
from . import embedding
from . import head
from . import register
from . import token_input

#: Layers of one block, named as ours (``block<i>_<role>``).
BLOCK_LAYERS = ("attention", "attention_norm", "ff_inner", "ff_outer", "ff_norm")


@register("transformer")
def build(config):
    c = dict(config)
    d = c["embedding_dim"]
    heads = int(c["num_heads"])
    key_dim = max(1, d // heads) if c.get("key_dim") is None else int(c["key_dim"])
    rate = c["dropout"]
    epsilon = c["layer_norm_epsilon"]

    ids = token_input()
    padding = ops.not_equal(ids, 0)
    attention_mask = ops.logical_and(ops.expand_dims(padding, 2), ops.expand_dims(padding, 1))
    positions = ops.cumsum(ops.ones_like(ids), axis=1) - 1
    x = embedding(c)(ids) + keras.layers.Embedding(c["max_length"], d,
                                                   name="position_embedding")(positions)
    x = keras.layers.Dropout(rate, name="input_dropout")(x)
    for i in range(int(c["num_layers"])):
        p = f"block{i}"
        a = keras.layers.MultiHeadAttention(heads, key_dim, dropout=c["attention_dropout"],
                                            name=f"{p}_attention")(
            x, x, attention_mask=attention_mask)
        x = keras.layers.LayerNormalization(epsilon=epsilon, name=f"{p}_attention_norm")(
            x + keras.layers.Dropout(rate, name=f"{p}_attention_dropout")(a))
        f = keras.layers.Dense(c["ff_dim"], activation=c["ff_activation"], name=f"{p}_ff_inner")(x)
        f = keras.layers.Dense(d, name=f"{p}_ff_outer")(f)
        x = keras.layers.LayerNormalization(epsilon=epsilon, name=f"{p}_ff_norm")(
            x + keras.layers.Dropout(rate, name=f"{p}_ff_dropout")(f))
    pooled = keras.layers.GlobalAveragePooling1D(name="mean_pool")(x, mask=padding)
    logits = head(pooled, c["num_classes"], dropout=rate)
    reference = keras.Model(ids, logits, name=f"reference_{c.get('name', 'transformer')}")

    def transfer(ours, ref):
        copy_embedding(ours, ref)
        copy_layer(ours.get_layer("position_embedding"), ref.get_layer("position_embedding"))
        for i in range(int(c["num_layers"])):
            for role in BLOCK_LAYERS:
                copy_layer(ours.get_layer(f"block{i}_{role}"), ref.get_layer(f"block{i}_{role}"))
        copy_head(ours, ref)

    return reference, transfer
