import keras
from keras import ops

from keras_posattn import masks as masks_lib
from keras_posattn.attention_ops import any_allowed
from keras_posattn.attention_ops import masked_exponentials
from keras_posattn.attention_ops import masked_softmax
from keras_posattn.attention_ops import self_attention_allowed
from keras_posattn.attention_ops import self_attention_biases
from keras_posattn.attention_ops import zero_padding
from keras_posattn.layers.weight_options import WeightOptions

COMPATIBILITIES = ("additive", "multi_dimensional", "dot")
ACTIVATIONS = ("elu", "scaled_tanh", "linear")
IMPLEMENTATIONS = ("auto", "dense", "banded")


@keras.saving.register_keras_serializable(package="keras_posattn")
class MaskedSelfAttention(WeightOptions, keras.layers.Layer):
    """Self-attention over a sequence restricted by a positional mask.

    For queries ``q`` and keys ``k`` of a sequence ``h`` (batch, n, d), the
    layer computes logits ``f(h_k, h_q) + M[q, k]``, gives blocked keys zero
    weight, normalises over keys and returns ``s_q = sum_k p[q, k] h_k`` - the
    paper's Masked-Self-Attention (MPSAN, Dai et al. 2020, eqs. 5-7). The
    value is the input itself; projections belong to the caller.

    Compatibilities ``f``:

    - ``"additive"`` (MPSAN's 1-D): ``act((U.h_k + V.h_q + b) / c)`` with
      ``U, V`` in R^d and a scalar ``b`` - one logit per (query, key) pair.
      ``s = P @ h`` is a matmul.
    - ``"multi_dimensional"`` (MPSAN Table 4's M-D, DiSAN's form):
      ``U, V`` in R^{d x d}, ``b`` in R^d - one logit per feature; the
      softmax over keys is taken per feature. Memory O(b n^2 d).
    - ``"dot"``: ``h_q . h_k / sqrt(d)``, no weights (CSPAN's parameter-free
      semantic attention).

    ``act`` is ``"elu"`` (paper: ``elu(x / c)``), ``"scaled_tanh"`` (the
    released MPSAN and DiSAN code: ``c * tanh(x / c)``) or ``"linear"``
    (``x / c``). With the additive 1-D form and a linear act the query term
    cancels in the softmax; the non-linearity is what makes it matter.

    Padding keys (from the Keras mask) are always blocked and padding queries
    give zero rows. A query with no allowed key (the first token under
    ``Backward()``, a one-token sentence under ``Faraway``) gets a zero output
    and a zero, finite gradient, in every dtype policy.

    Args:
        mask: a ``keras_posattn.masks.PositionalMask``, a short name such as
            ``"bw+sd"`` or ``"fa2"``, or None for no positional mask.
        compatibility: one of ``"additive"``, ``"multi_dimensional"``,
            ``"dot"``.
        activation: one of ``"elu"``, ``"scaled_tanh"``, ``"linear"``
            (ignored for ``"dot"``).
        scale: the constant ``c`` (paper: 5).
        dropout: dropout rate on the attention weights.
        compatibility_dropout: dropout rate on the copy of the input that
            feeds the compatibility only; the values ``h`` that the weights
            average stay undropped (where the released DiSAN/MPSAN code drops:
            ``rep_map_dp``).
        faraway_rule: ``"paper"`` or ``"released"``, used only when ``mask``
            is a short name containing a Faraway mask.
        implementation: ``"dense"`` computes the (n, n) logits; ``"banded"``
            only the keys within the mask's ``radius`` of each query (a
            Faraway window of radius m: 2m keys), O(n * m) time and memory,
            the same weights and outputs; ``"auto"`` (default) is banded when
            the mask has a finite radius.
        kernel_initializer, bias_initializer, kernel_regularizer: for U, V, b.

    Call arguments:
        inputs: float tensor (batch, n, d).
        mask: Keras padding mask (batch, n), True at real tokens.
        return_attention_scores: also return the weights, (batch, n, n), or
            (batch, n, n, d) for ``"multi_dimensional"``.

    Example:

    >>> import numpy as np
    >>> from keras_posattn.layers import MaskedSelfAttention
    >>> layer = MaskedSelfAttention(mask="bw+sd")
    >>> h = np.random.rand(2, 7, 16).astype("float32")
    >>> s, p = layer(h, return_attention_scores=True)
    >>> s.shape, p.shape
    ((2, 7, 16), (2, 7, 7))
    """

    def __init__(
        self,
        mask=None,
        compatibility="additive",
        activation="elu",
        scale=5.0,
        dropout=0.0,
        compatibility_dropout=0.0,
        faraway_rule="paper",
        implementation="auto",
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if compatibility not in COMPATIBILITIES:
            raise ValueError(
                f"compatibility must be one of {COMPATIBILITIES}, got {compatibility!r}."
            )
        if activation not in ACTIVATIONS:
            raise ValueError(
                f"activation must be one of {ACTIVATIONS}, got {activation!r}."
            )
        self.positional_mask = masks_lib.parse(mask, faraway_rule=faraway_rule)
        self.faraway_rule = faraway_rule
        self.compatibility = compatibility
        self.activation = activation
        self.scale = float(scale)
        self.dropout = float(dropout)
        self.compatibility_dropout = float(compatibility_dropout)
        if implementation not in IMPLEMENTATIONS:
            raise ValueError(
                f"implementation must be one of {IMPLEMENTATIONS}, got {implementation!r}."
            )
        radius = None if self.positional_mask is None else self.positional_mask.radius
        if implementation == "banded" and radius is None:
            raise ValueError(
                f"implementation='banded' needs a mask with a finite radius (a Faraway "
                f"window); {self.positional_mask!r} lets a query see every key."
            )
        self.implementation = implementation
        self._band = None
        if radius is not None and implementation != "dense":
            self._band = _band_of(self.positional_mask)
        self._init_weight_options(kernel_initializer, bias_initializer, kernel_regularizer)
        self.supports_masking = True
        self._dropout_layer = keras.layers.Dropout(self.dropout)
        self._compatibility_dropout_layer = keras.layers.Dropout(self.compatibility_dropout)

    def build(self, input_shape):
        dim = input_shape[-1]
        if self.compatibility == "additive":
            shapes = {"key_kernel": (dim,), "query_kernel": (dim,), "bias": ()}
        elif self.compatibility == "multi_dimensional":
            shapes = {
                "key_kernel": (dim, dim),
                "query_kernel": (dim, dim),
                "bias": (dim,),
            }
        else:
            shapes = {}
        for name, shape in shapes.items():
            is_bias = name == "bias"
            init = self.bias_initializer if is_bias else self.kernel_initializer
            if not is_bias and len(shape) == 1:
                # Glorot for a vector is ill-defined; treat it as a (d, 1) kernel.
                weight = self.add_weight(
                    name=name,
                    shape=(dim, 1),
                    initializer=init,
                    regularizer=self.kernel_regularizer,
                )
            else:
                weight = self.add_weight(
                    name=name,
                    shape=shape,
                    initializer=init,
                    regularizer=None if is_bias else self.kernel_regularizer,
                )
            setattr(self, name, weight)

    def _terms(self, h):
        """The key and query terms of ``act((U.h_k + V.h_q + b) / c)``,
        each already divided by c and the bias folded into the query term:
        the (b, n, n[, d]) sum of the two is the activation's input, with no
        pass over it to add ``b`` or divide by c. Additive: (b, n) each."""
        c = self.scale
        key_term = ops.matmul(h, self.key_kernel) / c
        query_term = (ops.matmul(h, self.query_kernel) + self.bias) / c
        if self.compatibility == "additive":
            return ops.squeeze(key_term, -1), ops.squeeze(query_term, -1)
        return key_term, query_term

    def _activate(self, x):
        """The activation of an input already divided by c."""
        if self.activation == "elu":
            return ops.elu(x)
        if self.activation == "scaled_tanh":
            return self.scale * ops.tanh(x)
        return x

    def _logits(self, h):
        if self.compatibility == "dot":
            d = ops.cast(ops.shape(h)[-1], h.dtype)
            return ops.matmul(h, ops.transpose(h, (0, 2, 1))) / ops.sqrt(d)
        # logits[b, q, k(, f)] = act((U.h_k + V.h_q + b) / c): (b, n_q, n_k)
        # additive, (b, n_q, n_k, d) multi-dimensional.
        key_term, query_term = self._terms(h)
        return self._activate(ops.expand_dims(key_term, 1) + ops.expand_dims(query_term, 2))

    def call(self, inputs, mask=None, return_attention_scores=False, training=None):
        if self._band is not None:
            return self._banded_call(inputs, mask, return_attention_scores, training)
        h = inputs
        n = ops.shape(h)[1]
        scored = self._compatibility_dropout_layer(h, training=training)
        logits = ops.cast(self._logits(scored), "float32")
        if self.compatibility == "multi_dimensional":
            allowed, penalty = self_attention_allowed(self.positional_mask, n, mask)
            if penalty is not None:
                logits = logits + ops.expand_dims(penalty, -1)
            if allowed is not None:
                allowed = ops.expand_dims(allowed, -1)
            # s[b, q, f] = sum_k p[b, q, k, f] h[b, k, f], the softmax's
            # division applied to the (b, n, d) sum, not the (b, n, n, d)
            # weights, and a query with no allowed key (padding queries
            # included) zeroed there too.
            exps, total = masked_exponentials(logits, allowed, axis=2, zero_blocked_rows=False)
            dropped = ops.cast(self._dropout_layer(exps, training=training), h.dtype)
            outputs = ops.sum(dropped * ops.expand_dims(h, 1), axis=2)
            outputs = outputs / ops.cast(ops.squeeze(total, 2), h.dtype)
            rows = any_allowed(allowed, axis=2)  # (b, n, 1, 1) or None
            if rows is not None:
                rows = ops.squeeze(rows, 2)
        else:
            # The mask as additive (n, n) and (b, 1, n) biases: no (b, n, n)
            # mask is built, and rows with no allowed key (padding queries
            # included) are zeroed on the (b, n, d) result.
            positional, keys, rows = self_attention_biases(self.positional_mask, n, mask)
            if positional is not None:
                logits = logits + positional
            if keys is not None:
                logits = logits + keys
            weights = masked_softmax(logits, axis=-1)  # the biases did the masking
            dropped = self._dropout_layer(weights, training=training)
            outputs = ops.matmul(ops.cast(dropped, h.dtype), h)
        if rows is not None:
            outputs = outputs * ops.cast(rows, h.dtype)
        if not return_attention_scores:
            return outputs
        if self.compatibility == "multi_dimensional":
            weights = exps / total
            rows = None if rows is None else ops.expand_dims(rows, 2)
        return outputs, (weights if rows is None else weights * rows)

    def _banded_call(self, h, mask, return_attention_scores, training):
        """The same attention over the band of allowed offsets only.

        For a translation-invariant mask with radius r, query q may only see
        keys q + o for the offsets o in ``self._band`` (|o| <= r): each
        offset's logits are one shifted copy of the key terms, so logits,
        weights and the weighted sum are (batch, n, offsets[, d]) instead of
        (batch, n, n[, d]).
        """
        offsets, penalties = self._band
        r = max(abs(o) for o in offsets)
        if mask is None:
            mask = ops.ones(ops.shape(h)[:2], dtype="bool")
        mask = ops.cast(mask, "bool")
        scored = self._compatibility_dropout_layer(h, training=training)

        n = ops.shape(h)[1]

        def shifted(x, offset, fill):
            # x[:, q + offset] for every query q, ``fill`` past either end.
            # ops.slice, not x[:, a:b]: the gradient of a strided slice
            # (StridedSliceGrad) made the banded step 3.7x slower without XLA
            # (BENCHMARKS.md, "Banded attention"); a slice's gradient is a pad.
            # Padded again for every offset: one pad shared by all offsets
            # was no faster and kept 119 MB more in the layer at n = 4,096,
            # batch 8 (BENCHMARKS.md, "Speed against stock Keras").
            rest = len(x.shape) - 2
            padded = ops.pad(x, [(0, 0), (r, r)] + [(0, 0)] * rest, constant_values=fill)
            return ops.slice(padded, [0, r + offset] + [0] * rest,
                             [ops.shape(x)[0], n] + list(x.shape[2:]))

        if self.compatibility == "dot":
            depth = ops.cast(ops.sqrt(float(h.shape[-1])), h.dtype)
            logits = [ops.sum(scored * shifted(scored, o, 0.0), axis=-1) / depth for o in offsets]
        else:
            key_term, query_term = self._terms(scored)
            logits = [self._activate(shifted(key_term, o, 0.0) + query_term) for o in offsets]
        logits = ops.stack([ops.cast(x, "float32") + p for x, p in zip(logits, penalties)], axis=2)
        allowed = ops.stack([shifted(mask, o, False) for o in offsets], axis=2)  # (b, n, O)
        allowed = ops.logical_and(allowed, ops.expand_dims(mask, -1))  # padding queries: zero rows
        if self.compatibility == "multi_dimensional":
            allowed = ops.expand_dims(allowed, -1)
        weights = masked_softmax(logits, allowed, axis=2)  # (b, n, O[, d])
        dropped = ops.cast(self._dropout_layer(weights, training=training), h.dtype)
        outputs = None
        for i, o in enumerate(offsets):
            w = dropped[:, :, i]
            if self.compatibility != "multi_dimensional":
                w = ops.expand_dims(w, -1)
            term = w * shifted(h, o, 0.0)
            outputs = term if outputs is None else outputs + term
        outputs = zero_padding(outputs, mask)
        if not return_attention_scores:
            return outputs
        return outputs, self._dense_weights(weights, offsets, ops.shape(h)[1])

    @staticmethod
    def _dense_weights(banded, offsets, n):
        """Banded weights (b, n, O[, d]) laid out as the (b, n, n[, d]) matrix
        ``[query, key]`` that the dense path returns (for inspection)."""
        q = ops.expand_dims(ops.arange(n), 1)
        k = ops.expand_dims(ops.arange(n), 0)
        dense = None
        for i, o in enumerate(offsets):
            diagonal = ops.cast(k - q == o, "float32")  # (n, n)
            w = banded[:, :, i]  # (b, n[, d])
            if len(banded.shape) == 4:
                term = ops.expand_dims(w, 2) * ops.expand_dims(diagonal, -1)
            else:
                term = ops.expand_dims(w, 2) * diagonal
            dense = term if dense is None else dense + term
        return dense

    def compute_mask(self, inputs, mask=None):
        return mask

    def compute_output_shape(self, input_shape):
        return input_shape

    def compute_output_spec(
        self, inputs, mask=None, return_attention_scores=False, training=None
    ):
        # Keras derives symbolic outputs from compute_output_shape(), which
        # cannot see return_attention_scores: without this, a functional call
        # asking for the scores silently got the output alone.
        outputs = keras.KerasTensor(inputs.shape, dtype=self.compute_dtype)
        if not return_attention_scores:
            return outputs
        batch, n, dim = inputs.shape
        shape = (batch, n, n)
        if self.compatibility == "multi_dimensional":
            shape = (batch, n, n, dim)
        return outputs, keras.KerasTensor(shape, dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "mask": (
                    None
                    if self.positional_mask is None
                    else keras.saving.serialize_keras_object(self.positional_mask)
                ),
                "compatibility": self.compatibility,
                "activation": self.activation,
                "scale": self.scale,
                "dropout": self.dropout,
                "compatibility_dropout": self.compatibility_dropout,
                "faraway_rule": self.faraway_rule,
                "implementation": self.implementation,
                **self._weight_options_config(),
            }
        )
        return config


def _band_of(positional_mask):
    """``(offsets, penalties)`` of a translation-invariant mask with a finite
    radius: the key offsets ``o`` (key = query + o) it allows, and the penalty
    it adds at each, read off its matrices on a window of 2 * radius + 1."""
    import numpy as np

    r = positional_mask.radius
    allowed, penalty = positional_mask.matrices(2 * r + 1)
    row_allowed = np.ones(2 * r + 1, bool) if allowed is None else \
        np.asarray(ops.convert_to_numpy(allowed))[r]
    row_penalty = np.zeros(2 * r + 1) if penalty is None else \
        np.asarray(ops.convert_to_numpy(penalty))[r]
    offsets = [int(o) for o in range(-r, r + 1) if row_allowed[o + r]]
    if not offsets:
        raise ValueError(f"{positional_mask!r} allows no key at all.")
    return offsets, [float(row_penalty[o + r]) for o in offsets]
