"""CSPAN written from stock Keras: the reference the zoo's ``cspan*`` presets are timed against.

A functional model of ``keras.layers`` (Embedding, Dropout, LayerNormalization,
Bidirectional LSTM, Dense, Softmax) and ``keras.ops`` on symbolic tensors,
computing what ``keras_posattn.models.cspan.CSPAN`` computes:

- embedding ``D`` (its padding rows are not zeroed: the attentions block
  padding keys and zero padding queries), dropout;
- ``fusion="position"``: ``D + PE`` at real tokens, 0 at padding, with the
  interleaved sine/cosine table of Vaswani et al. (positions 0..n-1, computed
  here from a cumulative sum of ones so that no dynamic length is needed);
- the parameter-free attentions ``softmax(X X^T / sqrt(d) [- |i - j|]) X``:
  ``ops.matmul`` logits, a dense (batch, n, n) mask "key and query are real
  tokens", stock ``Softmax`` masking (a padding query gets a zero row), the
  padding rows zeroed again; then ``LayerNormalization(epsilon=1e-5)`` and
  padding zeroed (LayerNorm maps a zero row to its beta);
- ``num_layers`` stacked ``Bidirectional(LSTM(d / 2))`` with the padding mask,
  padding zeroed after each;
- the multi-query pooling ``u = tanh(W_h F + b_h)`` (a ``Dense``), one logit
  per (query, token) as a bias-free ``Dense(num_queries)`` whose kernel is the
  query matrix transposed, stock ``Softmax`` masking over the tokens, the m
  pooled vectors concatenated (or averaged, ``query_fusion="mean"``) and a
  bias-free ``Dense(d)`` (W_f);
- dropout and the logits ``Dense``.

Stock MultiHeadAttention does not fit: CSPAN's attentions have no
projections at all. Weights are copied by ``transfer``: the embedding table
(``TokenEmbedding.table()``), the LayerNorms and Bi-LSTMs layer by layer
(same names), MultiQueryAttention's ``hidden_kernel``/``hidden_bias`` into
``multi_query_hidden``, ``queries`` transposed into ``multi_query_scores``,
``fusion_kernel`` (and ``fusion_bias``) into ``multi_query_fusion``, the
head's logits layer into ``head_logits``.

Every preset of ``zoo/cspan.toml`` is supported (all six ``fusion`` values,
both ``query_fusion`` values, ``residual`` on or off). ``trainable_embeddings
="oov"`` (frozen pretrained rows beside trainable OOV rows) has no stock
equivalent: the reference trains the whole table then (the same inference).
"""

import numpy as np

import keras
from keras import ops

from . import copy_embedding
from . import copy_head
from . import embedding
from . import head
from . import l2_factory
from . import register

FUSIONS = ("cascade", "parallel", "embedding", "position", "relative", "bilstm")


def _sinusoids(x, padding, max_wavelength=10000.0):
    """``x + PE`` at real tokens, 0 at padding; PE interleaved (sin at even
    channels, cos at odd), position = index in the tensor."""
    dim = x.shape[-1]
    channel = np.arange(dim)
    frequency = (max_wavelength ** (-2.0 * (channel // 2) / dim)).astype("float32")
    is_sine = channel % 2 == 0
    positions = ops.cumsum(ops.ones_like(padding, dtype="float32"), axis=1) - 1.0  # (b, n)
    angles = ops.expand_dims(positions, -1) * frequency  # (b, n, d)
    table = ops.where(is_sine, ops.sin(angles), ops.cos(angles))
    return (x + ops.cast(table, x.dtype)) * ops.cast(ops.expand_dims(padding, -1), x.dtype)


def _dot_self_attention(x, padding, distance=False):
    """Parameter-free ``softmax(x x^T / sqrt(d) [- |i - j|]) x`` over real tokens."""
    d = x.shape[-1]
    logits = ops.matmul(x, ops.transpose(x, (0, 2, 1))) / float(np.sqrt(d))
    if distance:
        positions = ops.cumsum(ops.ones_like(padding, dtype="float32"), axis=1)
        logits = logits - ops.abs(ops.expand_dims(positions, 2) - ops.expand_dims(positions, 1))
    allowed = ops.logical_and(ops.expand_dims(padding, 1), ops.expand_dims(padding, 2))
    weights = keras.layers.Softmax(axis=-1)(logits, mask=allowed)
    return ops.matmul(weights, x) * ops.cast(ops.expand_dims(padding, -1), x.dtype)


@register("cspan")
def build(config):
    """A stock-Keras CSPAN for ``config`` (``CSPAN.get_config()``), and its ``transfer``."""
    fusion = config["fusion"]
    if fusion not in FUSIONS:
        raise NotImplementedError(f"CSPAN reference: fusion={fusion!r} is not supported.")
    if config["query_fusion"] not in ("concat", "mean"):
        raise NotImplementedError(
            f"CSPAN reference: query_fusion={config['query_fusion']!r} is not supported.")
    d = int(config["embedding_dim"])
    m = int(config["num_queries"])
    regularizer = l2_factory(config["l2"])
    num_layers = int(config["num_layers"]) if fusion in ("cascade", "parallel", "bilstm") else 0

    token_ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")
    padding = ops.not_equal(token_ids, 0)
    padding_f = ops.cast(ops.expand_dims(padding, -1), "float32")
    x = keras.layers.Dropout(config["dropout"], name="embedding_dropout")(
        embedding(config)(token_ids))

    if fusion != "bilstm":
        semantic_input = _sinusoids(x, padding) if fusion == "position" else x
        s = _dot_self_attention(semantic_input, padding, distance=fusion == "relative")
        s = keras.layers.LayerNormalization(epsilon=1e-5, name="semantic_norm")(s) * padding_f
    if fusion in ("embedding", "position", "relative"):
        f = s
    else:
        h = x if fusion in ("parallel", "bilstm") else s
        for i in range(num_layers):
            lstm = keras.layers.LSTM(d // 2, return_sequences=True,
                                     kernel_regularizer=regularizer(),
                                     recurrent_regularizer=regularizer())
            h = keras.layers.Bidirectional(lstm, name=f"bilstm_{i}")(h, mask=padding) * padding_f
        if fusion == "bilstm":
            f = h
        else:
            p = _dot_self_attention(h, padding)
            p = keras.layers.LayerNormalization(epsilon=1e-5, name="positional_norm")(p) * padding_f
            f = s + p if config["residual"] else p

    # Multi-query attention pooling (eqs. 10-13).
    u = keras.layers.Dense(d, activation="tanh", kernel_regularizer=regularizer(),
                           name="multi_query_hidden")(f)
    scores = keras.layers.Dense(m, use_bias=False, name="multi_query_scores")(u)  # (b, n, m)
    alpha = keras.layers.Softmax(axis=-1)(ops.transpose(scores, (0, 2, 1)),
                                          mask=ops.expand_dims(padding, 1))
    pooled = ops.matmul(alpha, f)  # (b, m, d)
    if config["query_fusion"] == "concat":
        pooled = keras.layers.Reshape((m * d,))(pooled)
    else:
        pooled = ops.mean(pooled, axis=1)
    pooled = keras.layers.Dense(d, use_bias=False, kernel_regularizer=regularizer(),
                                name="multi_query_fusion")(pooled)
    logits = head(pooled, int(config["num_classes"]), dropout=config["dropout"],
                  regularizer=regularizer)
    reference = keras.Model(token_ids, logits, name="cspan_reference")

    def transfer(ours, ref):
        """Copy ``ours`` (a zoo CSPAN) into ``ref`` (the model above)."""
        copy_embedding(ours, ref)
        names = {"semantic_norm", "positional_norm", *(f"bilstm_{i}" for i in range(num_layers))}
        for layer in ref.layers:
            if layer.name in names:
                layer.set_weights(ours.get_layer(layer.name).get_weights())
        pool = ours.get_layer("multi_query")
        ref.get_layer("multi_query_hidden").set_weights(
            [pool.hidden_kernel.numpy(), pool.hidden_bias.numpy()])
        ref.get_layer("multi_query_scores").set_weights([pool.queries.numpy().T])
        if pool.fusion_bias is not None:  # pragma: no cover - CSPAN builds it without
            raise NotImplementedError("CSPAN reference: a MultiQueryAttention fusion bias.")
        ref.get_layer("multi_query_fusion").set_weights([pool.fusion_kernel.numpy()])
        copy_head(ours, ref)

    return reference, transfer
