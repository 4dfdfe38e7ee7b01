"""MPSAN (Dai, Li, Xu; AAAI-20) from stock Keras, for ``keras_posattn.models.mpsan``.

The same function as the zoo's ``MPSAN`` for every value its presets use,
written without the library:

- token embedding: ``keras.layers.Embedding``;
- each branch: ``Dense(d, act)`` projection ``h``, then ``MaskedAttention``
  below, a plain layer that builds the branch's positional mask as a dense
  (n, n) matrix on every call (``|i - j|``, ``j < i``... from
  ``ops.arange(n)``; no banded path for Faraway masks), scores with stock
  ``Dense`` layers (1-D additive: ``Dense(1)`` for the key term ``U.h_k``,
  ``Dense(1)`` with the scalar ``b`` for the query term ``V.h_q``; the
  multi-dimensional form the same with ``d`` units), masks with the stock
  ``keras.layers.Softmax(axis)(logits, mask=allowed)`` and multiplies the
  weights by ``allowed`` (a query with no allowed key, the first word under
  Backward, gets zero weights, as DiSAN's and MPSAN's released code does);
- fusion: Tokens-Position-Weight as ``Dense(k d)`` on ``w`` plus a
  position-dependent bias table sliced to n (``PositionBias``), ``Reshape``
  to (n, k, d), ``Softmax(axis=2)``, a weighted sum of the stacked sources;
  the fusion gate as two ``Dense`` layers and a sigmoid; the mean as a sum;
- pooling: multi-dimensional source2token attention as ``Dense``, ``Dense``,
  ``Softmax(axis=1)`` with the padding mask; the mean as stock
  ``GlobalAveragePooling1D`` with the padding mask;
- head: ``Dropout``, ``Dense(d, act)``, ``Dropout``, ``Dense(classes)``.

Dropout layers stand where ``dropout_placement`` puts ours (paper: the
embedding, the fused sequence and the head's inputs; released: the input of
every linear map and the ``h`` that feeds each compatibility).

Supported: ``branch_masks`` given as short names (``fa<m>``, ``bw``, ``fw``,
``d``, ``sd`` joined by ``+``) under either ``faraway_rule``; compatibility
``additive``, ``multi_dimensional`` or ``dot``; activations ``elu``,
``scaled_tanh``, ``linear``; fusion ``tpw`` (position or shared bias),
``gate``, ``mean``; pooling ``multi_dimensional`` or ``mean``. Mask objects
(serialised dicts) in ``branch_masks`` raise ``NotImplementedError``.

Differences that do not change the logits: padded positions of the fused
sequence are not zeroed (the pooling never reads them), an all-padding text
is not guarded (no preset input has one in the benchmarks).
"""

import keras
from keras import ops

from . import assign
from . import copy_embedding
from . import copy_head
from . import copy_layer
from . import embedding
from . import head
from . import l2_factory
from . import register
from . import token_input


def parse_mask(spec, faraway_rule="paper"):
    """``"fw+sd"`` -> ``[("fw",), ("sd",)]``; ``"fa3"`` -> ``[("fa", radius)]``,
    the radius allowed by the rule (paper ``|i-j| <= m``, released ``< m``)."""
    if not isinstance(spec, str):
        raise NotImplementedError(
            f"reference mpsan: branch mask {spec!r} is not a short name (fa<m>, bw, fw, d, sd)."
        )
    parts = []
    for token in spec.strip().lower().replace(" ", "").split("+"):
        if token.startswith("fa") and token[2:].isdigit():
            m = int(token[2:])
            parts.append(("fa", m if faraway_rule == "paper" else m - 1))
        elif token in ("bw", "fw", "d", "sd"):
            parts.append((token,))
        else:
            raise NotImplementedError(f"reference mpsan: unknown mask {token!r} in {spec!r}.")
    return parts


def mask_matrices(parts, n):
    """Dense (n, n) ``allowed`` (bool or None) and ``penalty`` (float or None),
    indexed [query i, key j], for the parsed mask."""
    position = ops.arange(n, dtype="int32")
    i = ops.expand_dims(position, 1)
    j = ops.expand_dims(position, 0)
    distance = ops.abs(i - j)
    allowed, penalty = None, None
    for part in parts:
        kind = part[0]
        block, add = None, None
        if kind == "fa":
            block = ops.logical_and(distance <= part[1], distance > 0)
        elif kind == "bw":
            block = j < i
        elif kind == "fw":
            block = j > i
        elif kind == "d":
            add = -ops.cast(distance, "float32")
        else:  # sd: -log|i - j| off the diagonal, 0 on it
            add = -ops.log(ops.maximum(ops.cast(distance, "float32"), 1.0))
        if block is not None:
            allowed = block if allowed is None else ops.logical_and(allowed, block)
        if add is not None:
            penalty = add if penalty is None else penalty + add
    return allowed, penalty


class MaskedAttention(keras.layers.Layer):
    """Self-attention of ``h`` under a positional mask, with stock sublayers.

    ``logits[b, i, j] = act((U.x_j + V.x_i + b) / c) + M[i, j]`` with ``x`` the
    (optionally dropped) copy of ``h``; blocked and padded keys masked by
    ``Softmax``, the weights multiplied by the allowed mask, ``s_i = sum_j
    p[i, j] h_j``. ``multi_dimensional``: ``U, V`` are d x d and the softmax
    over keys is taken per feature; ``dot``: ``h_i . h_j / sqrt(d)``.
    """

    def __init__(self, mask="bw", faraway_rule="paper", compatibility="additive",
                 activation="elu", scale=5.0, compatibility_dropout=0.0,
                 kernel_regularizer=None, **kwargs):
        super().__init__(**kwargs)
        self.parts = parse_mask(mask, faraway_rule)
        self.compatibility = compatibility
        self.activation = activation
        self.scale = float(scale)
        self.kernel_regularizer = kernel_regularizer
        self.dropout = keras.layers.Dropout(compatibility_dropout)
        self.softmax = keras.layers.Softmax(axis=2)

    def build(self, input_shape):
        if self.compatibility == "dot":
            return
        units = 1 if self.compatibility == "additive" else input_shape[-1]
        self.key = keras.layers.Dense(units, use_bias=False, name="key",
                                      kernel_regularizer=self.kernel_regularizer)
        self.query = keras.layers.Dense(units, name="query",  # its bias is b
                                        kernel_regularizer=self.kernel_regularizer)
        self.key.build(input_shape)
        self.query.build(input_shape)

    def _act(self, x):
        c = self.scale
        if self.activation == "elu":
            return ops.elu(x / c)
        if self.activation == "scaled_tanh":
            return c * ops.tanh(x / c)
        return x / c

    def call(self, h, padding=None, training=None):
        n = ops.shape(h)[1]
        allowed, penalty = mask_matrices(self.parts, n)
        if allowed is not None:
            allowed = ops.expand_dims(allowed, 0)
        if padding is not None:  # [b, i, j]: query and key both real
            both = ops.logical_and(ops.expand_dims(padding, 1), ops.expand_dims(padding, 2))
            allowed = both if allowed is None else ops.logical_and(allowed, both)
        x = self.dropout(h, training=training)
        if self.compatibility == "dot":
            logits = ops.matmul(x, ops.transpose(x, (0, 2, 1))) / ops.sqrt(
                ops.cast(ops.shape(h)[-1], h.dtype))
        elif self.compatibility == "additive":
            logits = self._act(ops.transpose(self.key(x), (0, 2, 1)) + self.query(x))
        else:  # multi_dimensional: (b, i, j, d)
            logits = self._act(ops.expand_dims(self.key(x), 1) + ops.expand_dims(self.query(x), 2))
        if self.compatibility == "multi_dimensional":
            if penalty is not None:
                logits = logits + ops.expand_dims(penalty, -1)
            allowed = None if allowed is None else ops.expand_dims(allowed, -1)
        elif penalty is not None:
            logits = logits + penalty
        weights = self.softmax(logits, mask=allowed)
        if allowed is not None:
            weights = weights * ops.cast(allowed, weights.dtype)
        if self.compatibility == "multi_dimensional":
            return ops.sum(weights * ops.expand_dims(h, 1), axis=2)
        return ops.matmul(weights, h)


class PositionBias(keras.layers.Layer):
    """Adds row ``t`` of a learned (max_length, width) table at position ``t``."""

    def __init__(self, max_length, **kwargs):
        super().__init__(**kwargs)
        self.max_length = int(max_length)

    def build(self, input_shape):
        self.bias = self.add_weight(name="bias", shape=(self.max_length, input_shape[-1]),
                                    initializer="zeros")

    def call(self, x):
        return x + self.bias[: ops.shape(x)[1]]


def multi_dimensional_pooling(x, padding, activation, regularizer, dropout=0.0,
                              prefix="pooling"):
    """Source2token attention: ``p = softmax_t(W_2 act(W_1 x_t + b_1) + b_2)`` per
    feature over the real positions, ``sum_t p_t x_t``."""
    dim = x.shape[-1]
    hidden = keras.layers.Dense(dim, activation=activation, name=f"{prefix}_hidden",
                                kernel_regularizer=regularizer())(
        keras.layers.Dropout(dropout, name=f"{prefix}_hidden_dropout")(x))
    logits = keras.layers.Dense(dim, name=f"{prefix}_logits", kernel_regularizer=regularizer())(
        keras.layers.Dropout(dropout, name=f"{prefix}_logits_dropout")(hidden))
    real = ops.expand_dims(padding, -1)
    weights = keras.layers.Softmax(axis=1, name=f"{prefix}_softmax")(logits, mask=real)
    weights = weights * ops.cast(real, weights.dtype)
    return ops.sum(weights * x, axis=1)


def copy_attention(ours_attention, reference_attention):
    """``MaskedSelfAttention``'s U, V, b into the reference's key / query ``Dense``."""
    if ours_attention.compatibility == "dot":
        return
    assign(reference_attention.key.kernel, ours_attention.key_kernel)
    assign(reference_attention.query.kernel, ours_attention.query_kernel)
    assign(reference_attention.query.bias, ours_attention.bias)


def copy_pooling(ours_pooling, reference, prefix="pooling"):
    """``MultiDimensionalAttention``'s two maps into the reference's ``Dense`` layers."""
    for i, part in ((1, "hidden"), (2, "logits")):
        layer = reference.get_layer(f"{prefix}_{part}")
        assign(layer.kernel, getattr(ours_pooling, f"kernel_{i}"))
        assign(layer.bias, getattr(ours_pooling, f"bias_{i}"))


def branch_name(spec):
    return spec.strip().lower().replace(" ", "").replace("+", "_")


@register("mpsan")
def build(config):
    c = dict(config)
    d = c["embedding_dim"] if c.get("hidden_dim") is None else int(c["hidden_dim"])
    rate = float(c["dropout"])
    released = c["dropout_placement"] == "released"
    inner = rate if released else 0.0  # dropout on the inputs of linear maps
    outer = 0.0 if released else rate  # dropout on w and the fused sequence
    regularizer = l2_factory(c["l2"] / 2.0)  # TF1's wd * sum(w^2) / 2
    specs = list(c["branch_masks"])
    for spec in specs:
        parse_mask(spec, c["faraway_rule"])  # NotImplementedError early

    ids = token_input()
    padding = ops.not_equal(ids, 0)
    w = embedding(c)(ids)
    w = keras.layers.Dropout(outer, name="embedding_dropout")(w)
    sources = []
    for spec in specs:
        name = branch_name(spec)
        x = keras.layers.Dropout(inner, name=f"{name}_input_dropout")(w)
        h = keras.layers.Dense(d, activation=c["branch_activation"], name=f"{name}_projection",
                               kernel_regularizer=regularizer())(x)
        s = MaskedAttention(
            spec, c["faraway_rule"], c["compatibility"], c["compatibility_activation"],
            c["scale"], compatibility_dropout=inner, kernel_regularizer=regularizer(),
            name=f"{name}_attention",
        )(h, padding=padding)
        if c["fusion"] == "gate":
            gate = ops.sigmoid(
                keras.layers.Dense(d, use_bias=False, name=f"{name}_gate_attention",
                                   kernel_regularizer=regularizer())(s)
                + keras.layers.Dense(d, name=f"{name}_gate_input",
                                     kernel_regularizer=regularizer())(h))
            s = gate * h + (1.0 - gate) * s
        sources.append(s)

    if not sources:
        x = w
    elif c["fusion"] == "tpw":
        k = len(sources) + 1
        scored = keras.layers.Dropout(inner, name="fusion_input_dropout")(w)
        position_bias = c["fusion_bias"] == "position"
        logits = keras.layers.Dense(k * d, use_bias=not position_bias, name="fusion_kernel",
                                    kernel_regularizer=regularizer())(scored)
        if position_bias:
            logits = PositionBias(c["max_length"], name="fusion_position_bias")(logits)
        logits = keras.layers.Reshape((-1, k, d), name="fusion_reshape")(logits)
        weights = keras.layers.Softmax(axis=2, name="fusion_softmax")(logits)
        x = ops.sum(weights * ops.stack(sources + [w], axis=2), axis=2)
    elif c["fusion"] == "gate":
        x = sources[0] if len(sources) == 1 else keras.layers.Concatenate()(sources)
    else:  # mean of the sources and w
        x = (sum(sources[1:], sources[0]) + w) / float(len(sources) + 1)
    x = keras.layers.Dropout(outer, name="fused_dropout")(x)

    if c["pooling"] == "multi_dimensional":
        pooled = multi_dimensional_pooling(x, padding, c["pooling_activation"], regularizer,
                                           dropout=inner)
    else:
        pooled = keras.layers.GlobalAveragePooling1D(name="pooling")(x, mask=padding)
    logits = head(pooled, c["num_classes"], d if c.get("head_units") is None else c["head_units"],
                  c["head_activation"], rate, c["logits_bias"], regularizer)
    reference = keras.Model(ids, logits, name=f"reference_{c.get('name', 'mpsan')}")

    def transfer(ours, ref):
        copy_embedding(ours, ref)
        for spec in specs:
            name = branch_name(spec)
            copy_layer(ours.get_layer(f"{name}_projection"), ref.get_layer(f"{name}_projection"))
            copy_attention(ours.get_layer(f"{name}_attention"), ref.get_layer(f"{name}_attention"))
            if c["fusion"] == "gate":
                gate = ours.get_layer(f"{name}_fusion_gate")
                assign(ref.get_layer(f"{name}_gate_attention").kernel, gate.attention_kernel)
                assign(ref.get_layer(f"{name}_gate_input").kernel, gate.input_kernel)
                assign(ref.get_layer(f"{name}_gate_input").bias, gate.bias)
        if sources and c["fusion"] == "tpw":
            fusion = ours.get_layer("position_fusion")
            assign(ref.get_layer("fusion_kernel").kernel, fusion.kernel)
            if c["fusion_bias"] == "position":
                assign(ref.get_layer("fusion_position_bias").bias, fusion.bias_weight)
            else:
                assign(ref.get_layer("fusion_kernel").bias, fusion.bias_weight)
        if c["pooling"] == "multi_dimensional":
            copy_pooling(ours.get_layer("pooling"), ref)
        copy_head(ours, ref)

    return reference, transfer
