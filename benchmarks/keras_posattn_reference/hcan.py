"""HCAN written from stock Keras: the reference the zoo's ``hcan*`` presets are timed against.

Two families share this file: ``hcan`` (hierarchical, token ids (batch, S, W))
and ``hcan_flat`` (one block over token ids (batch, n)). Functional models of
``keras.layers`` (Embedding, Dropout, Conv1D, Reshape, Softmax, EinsumDense,
LayerNormalization, GlobalMaxPooling1D, Dense) and ``keras.ops``, computing
what ``keras_posattn.models.hcan.HCAN`` / ``FlatHCAN`` compute. One block, at
each level, over a sequence ``x`` (batch, n, d_in) with padding mask ``pad``:

1. learned positions: an ``Embedding(max_positions, d_in)`` looked up at
   0..n-1 (a cumulative sum of ones, so no dynamic length is needed), added,
   padding zeroed, dropout. A longer input fails in the lookup (ours fails
   with a message naming ``max_length``);
2. convolutional multi-head self-attention, one or two branches: Q, K, V =
   act(``Conv1D(units, kernel_size, padding="same")``(x)) (ELU, ELU, ELU;
   with two branches also ELU, ELU, tanh); the input's padding is already
   zero, so a window past the last real word sees zeros, as ours. Each branch:
   ``Reshape`` to (b, n, heads, units / heads), ``einsum`` logits scaled by
   sqrt(units / heads), stock ``Softmax`` masking with a dense (b, 1, n, n)
   mask "query and key are real", dropout on the weights, ``einsum`` with V,
   ``Reshape`` back. The branches are multiplied, ``LayerNormalization``,
   padding zeroed;
3. the sequence vector: target attention (K = ELU(``Conv1D``(x)); one logit
   per (position, head) from the learned target vector, held as the
   (heads, units / heads) kernel of a bias-free ``EinsumDense``; scaled, stock
   ``Softmax`` masking over positions, dropout, the heads' weights average V =
   x (or ELU(``Conv1D``(x)) with ``project_values``) head by head), or, for
   ``pooling="max"``, padding filled with -1e9, ``GlobalMaxPooling1D``, an
   empty sequence (a padding sentence) set to zeros, as ours.

Stock MultiHeadAttention does not fit: its Q/K/V are dense projections, and
HCAN's are activated convolutions (and a learned target query). ``hcan``
folds the sentences into the batch with ``han.FoldSentences``, runs the word
block, unfolds, and runs the sentence block over the sentence vectors with
the mask "the sentence has a word"; a padding sentence in the middle of a
document keeps its index as its position, as ours.

Weights are copied by ``transfer`` from our layers' variables by name: the
embedding table (``TokenEmbedding.table()``); ``<level>position_embedding``;
``<level>self_attention/{query,key,value}_{elu,tanh}`` into the Conv1D layers
``<level>self_attention_{query,key,value}_{elu,tanh}``;
``<level>self_attention/layer_norm``; ``<level>target_attention/target``
(1, units) reshaped to (heads, units / heads) into ``<level>target``, its
``key`` (and ``value``) convolutions into ``<level>target_{key,value}``; the
head's logits layer into ``head_logits``.

Every preset of ``zoo/hcan.toml`` is supported (one or two self-attentions,
target or max pooling, ``project_values`` either way).
``trainable_embeddings="oov"`` trains the whole table.
"""

import numpy as np

import keras
from keras import ops

from . import copy_embedding
from . import copy_head
from . import embedding
from . import head
from . import register
from .han import FoldSentences
from .han import UnfoldSentences

_FILL = -1e9  # padding never wins the max pool (an empty sequence is set to 0 by where)
#: Activations of Q, K and V in each self-attention branch, by weight suffix.
_BRANCHES = (("elu", "elu", "elu", "elu"), ("tanh", "elu", "elu", "tanh"))


def _check(config):
    if config["self_attentions"] not in (1, 2):
        raise NotImplementedError(
            f"HCAN reference: self_attentions={config['self_attentions']!r}.")
    if config["pooling"] not in ("target", "max"):
        raise NotImplementedError(f"HCAN reference: pooling={config['pooling']!r}.")
    if int(config["units"]) % int(config["num_heads"]):
        raise NotImplementedError("HCAN reference: units must be divisible by num_heads.")


def _split(x, heads):
    """(b, n, w) -> (b, n, heads, w / heads)."""
    return keras.layers.Reshape((-1, heads, x.shape[-1] // heads))(x)


def _block(prefix, x, pad, max_positions, config):
    """One HCAN block over x (b, n, d_in), mask pad (b, n) -> (b, d)."""
    units, heads = int(config["units"]), int(config["num_heads"])
    kernel_size, dropout = int(config["kernel_size"]), float(config["dropout"])
    scale = 1.0 / float(np.sqrt(units // heads))
    pad_f = ops.cast(ops.expand_dims(pad, -1), "float32")

    def conv(name, activation):
        return keras.layers.Conv1D(units, kernel_size, padding="same", activation=activation,
                                   name=f"{prefix}{name}")

    # 1. Learned positions, dropout.
    positions = ops.cumsum(ops.ones_like(pad, dtype="int32"), axis=1) - 1
    table = keras.layers.Embedding(max_positions, x.shape[-1],
                                   name=f"{prefix}position_embedding")
    x = (x + table(positions)) * pad_f
    x = keras.layers.Dropout(dropout, name=f"{prefix}embedding_dropout")(x)

    # 2. Convolutional multi-head self-attention (one or two branches, multiplied).
    allowed = ops.expand_dims(
        ops.logical_and(ops.expand_dims(pad, 1), ops.expand_dims(pad, 2)), 1)  # (b, 1, n, n)
    attended = None
    for suffix, q_act, k_act, v_act in _BRANCHES[: int(config["self_attentions"])]:
        q = _split(conv(f"self_attention_query_{suffix}", q_act)(x), heads)
        k = _split(conv(f"self_attention_key_{suffix}", k_act)(x), heads)
        v = _split(conv(f"self_attention_value_{suffix}", v_act)(x), heads)
        logits = ops.einsum("bqhd,bkhd->bhqk", q * scale, k)
        weights = keras.layers.Softmax(axis=-1)(logits, mask=allowed)
        weights = keras.layers.Dropout(dropout)(weights)
        out = keras.layers.Reshape((-1, units))(ops.einsum("bhqk,bkhd->bqhd", weights, v))
        attended = out if attended is None else attended * out
    x = keras.layers.LayerNormalization(epsilon=float(config["layer_norm_epsilon"]),
                                        name=f"{prefix}self_attention_layer_norm")(attended)
    x = x * pad_f

    # 3. The sequence vector.
    if config["pooling"] == "max":
        pooled = keras.layers.GlobalMaxPooling1D(name=f"{prefix}max_pool")(
            ops.where(ops.expand_dims(pad, -1), x, _FILL))
        return ops.where(ops.any(pad, axis=1, keepdims=True), pooled, 0.0)
    keys = _split(conv("target_key", "elu")(x), heads)
    values = conv("target_value", "elu")(x) if config["project_values"] else x
    target = keras.layers.EinsumDense("bnhd,hd->bnh", output_shape=(None, heads),
                                      name=f"{prefix}target")
    logits = ops.transpose(target(keys), (0, 2, 1)) * scale  # (b, heads, n)
    weights = keras.layers.Softmax(axis=-1)(logits, mask=ops.expand_dims(pad, 1))
    weights = keras.layers.Dropout(dropout)(weights)
    pooled = ops.einsum("bhn,bnhd->bhd", weights, _split(values, heads))
    return keras.layers.Reshape((values.shape[-1],))(pooled)


def _transfer_block(ours, ref, prefix, config):
    def variables(layer_name):
        layer = ours.get_layer(layer_name)
        marker = layer.name + "/"
        return {w.path[w.path.index(marker) + len(marker):]: w.numpy() for w in layer.weights}

    ref.get_layer(f"{prefix}position_embedding").set_weights(
        [variables(f"{prefix}position_embedding")["embeddings"]])
    attention = variables(f"{prefix}self_attention")
    for suffix, *_ in _BRANCHES[: int(config["self_attentions"])]:
        for role in ("query", "key", "value"):
            name = f"{role}_{suffix}"
            ref.get_layer(f"{prefix}self_attention_{name}").set_weights(
                [attention[f"{name}/kernel"], attention[f"{name}/bias"]])
    ref.get_layer(f"{prefix}self_attention_layer_norm").set_weights(
        [attention["layer_norm/gamma"], attention["layer_norm/beta"]])
    if config["pooling"] == "max":
        return
    target = variables(f"{prefix}target_attention")
    heads = int(config["num_heads"])
    ref.get_layer(f"{prefix}target").set_weights([target["target"].reshape(heads, -1)])
    roles = ("key", "value") if config["project_values"] else ("key",)
    for role in roles:
        ref.get_layer(f"{prefix}target_{role}").set_weights(
            [target[f"{role}/kernel"], target[f"{role}/bias"]])


@register("hcan")
def build(config):
    """A stock-Keras hierarchical HCAN for ``config`` (``HCAN.get_config()``), and its
    ``transfer``."""
    _check(config)
    token_ids = keras.Input(shape=(None, None), dtype="int32", name="token_ids")
    words = FoldSentences(name="fold_sentences")(token_ids)  # (batch * S, W)
    word_mask = ops.not_equal(words, 0)
    x = embedding(config)(words)
    sentences = _block("word_", x, word_mask, int(config["max_length"]), config)
    sentences = UnfoldSentences(name="unfold_sentences")(sentences, token_ids)
    sentence_mask = ops.any(ops.not_equal(token_ids, 0), axis=-1)
    document = _block("sentence_", sentences, sentence_mask, int(config["max_sentences"]),
                      config)
    logits = head(document, int(config["num_classes"]))
    reference = keras.Model(token_ids, logits, name="hcan_reference")

    def transfer(ours, ref):
        """Copy ``ours`` (a zoo HCAN) into ``ref`` (the model above)."""
        copy_embedding(ours, ref)
        _transfer_block(ours, ref, "word_", config)
        _transfer_block(ours, ref, "sentence_", config)
        copy_head(ours, ref)

    return reference, transfer


@register("hcan_flat")
def build_flat(config):
    """A stock-Keras flat HCAN for ``config`` (``FlatHCAN.get_config()``), and its ``transfer``."""
    _check(config)
    token_ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")
    mask = ops.not_equal(token_ids, 0)
    pooled = _block("", embedding(config)(token_ids), mask, int(config["max_length"]), config)
    logits = head(pooled, int(config["num_classes"]))
    reference = keras.Model(token_ids, logits, name="hcan_flat_reference")

    def transfer(ours, ref):
        """Copy ``ours`` (a zoo FlatHCAN) into ``ref`` (the model above)."""
        copy_embedding(ours, ref)
        _transfer_block(ours, ref, "", config)
        copy_head(ours, ref)

    return reference, transfer
