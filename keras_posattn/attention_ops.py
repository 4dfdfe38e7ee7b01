"""The attention and masking core every layer of the library goes through.

Two rules are enforced here once, so no layer has to remember them:

1. Blocked entries (positional masks, padding keys) get exactly zero weight,
   and a row with no allowed entry gives all-zero weights and a zero,
   finite gradient - never NaN. Softmax is taken in float32 with a finite
   fill value, whatever the layer's compute dtype (float16 overflows at
   -1e9), then the result is multiplied by the allowed mask.
2. Padding keys are always blocked; padding queries get zero rows.
"""

import warnings

from keras import ops

# Finite fill for blocked logits. The softmax runs in float32, where this is
# far below any real logit yet exp() of it underflows cleanly to 0.
_FLOAT32_FILL = -1e9


def masked_softmax(logits, allowed=None, axis=-1):
    """Softmax over ``axis`` that gives blocked entries exactly zero weight.

    Args:
        logits: float tensor (any float dtype; computed in float32).
        allowed: bool tensor broadcastable to ``logits``, or None. It is never
            materialised at the logits' full shape.
        axis: the axis to normalise over.

    Returns:
        float32 tensor of the shape of ``logits``. Rows with no allowed entry
        are all zeros.

    Over the last axis this is the backend's softmax. Over any other axis it
    is written out (``exp(x - max) / sum``): TensorFlow's softmax over a
    middle axis transposes the tensor to the end and back, forward and in
    the gradient, which cost more than the softmax itself on a CPU
    (BENCHMARKS.md, "Speed against stock Keras").
    """
    rank = len(logits.shape)
    last = axis in (-1, rank - 1)
    logits, allowed = _filled(logits, allowed)
    if last:
        with warnings.catch_warnings():
            # A softmax over one key is legitimate here (a one-word text, the
            # top of a pyramid); Keras warns about it at every trace.
            warnings.filterwarnings("ignore", message="You are using a softmax over axis")
            weights = ops.softmax(logits, axis=axis)
        if allowed is None:
            return weights
        # A fully blocked row was softmax-ed to uniform: multiply it back to zero.
        return weights * ops.cast(allowed, "float32")
    exps, total = _exponentials(logits, allowed, axis)
    return exps / total


def masked_exponentials(logits, allowed=None, axis=-1, zero_blocked_rows=True):
    """``masked_softmax`` before its division: ``(exps, total)`` with
    ``exps / total`` the weights (``total`` keeps ``axis`` as size 1).

    For a weighted sum over ``axis``, ``sum(exps * v) / total`` divides the
    (smaller) result instead of every weight: the multi-dimensional
    attention's (b, n, n, d) weights are never divided. Dropout commutes with
    the division (it scales entries), so it may apply to ``exps``. Blocked
    entries and fully blocked rows behave as in ``masked_softmax``.

    ``zero_blocked_rows=False`` skips the pass over ``exps`` that zeroes the
    rows with no allowed entry (their exps are then all 1, and their total
    their length): blocked entries of the other rows are still exactly 0.
    The caller zeroes those rows' results instead, on a tensor smaller than
    the logits (``any_allowed``).
    """
    filled, allowed = _filled(logits, allowed)
    return _exponentials(filled, allowed if zero_blocked_rows else None, axis)


def any_allowed(allowed, axis):
    """float32 1 where a row of ``allowed`` has an allowed entry along
    ``axis`` (kept as size 1), else 0; None for None."""
    if allowed is None:
        return None
    return ops.cast(ops.any(ops.cast(allowed, "bool"), axis=axis, keepdims=True), "float32")


def _filled(logits, allowed):
    """float32 logits with blocked entries set to the finite fill, and
    ``allowed`` as bool (or None). ``allowed`` is broadcast lazily by
    ``where`` and the products after it: a (b, n, n, 1) mask for (b, n, n, d)
    logits stays that small, and so does the float copy kept for the
    backward pass."""
    logits = ops.cast(logits, "float32")
    if allowed is None:
        return logits, None
    allowed = ops.cast(allowed, "bool")
    return ops.where(allowed, logits, _FLOAT32_FILL), allowed


def _exponentials(filled, allowed, axis):
    # The max is a constant shift (the softmax does not depend on it), and an
    # allowed entry: a row with any allowed entry sums to at least exp(0) = 1.
    # A fully blocked row is all fill, its exps are zeroed by ``allowed`` and
    # its total is 0: the floor of 1 makes it 0 / 1, never 0 / 0, and keeps
    # the total (1..n) representable when it is cast to float16.
    exps = ops.exp(filled - ops.stop_gradient(ops.max(filled, axis=axis, keepdims=True)))
    if allowed is not None:
        exps = exps * ops.cast(allowed, "float32")
    return exps, ops.maximum(ops.sum(exps, axis=axis, keepdims=True), 1.0)


def self_attention_allowed(positional_mask, length, padding_mask=None):
    """Combine a positional mask with padding into one allowed matrix.

    Args:
        positional_mask: a ``keras_posattn.masks.PositionalMask`` or None.
        length: the sequence length n (int or scalar tensor).
        padding_mask: bool (batch, n), True at real tokens, or None.

    Returns:
        ``(allowed, penalty)``: ``allowed`` is bool, broadcastable to
        (batch, n, n) (``[query, key]``), or None when nothing is blocked;
        ``penalty`` is float32 (n, n) or None.
    """
    allowed, penalty = (None, None)
    if positional_mask is not None:
        allowed, penalty = positional_mask.matrices(length)
        if allowed is not None:
            allowed = ops.expand_dims(allowed, 0)  # (1, n, n)
    if padding_mask is not None:
        padding_mask = ops.cast(padding_mask, "bool")
        keys = ops.expand_dims(padding_mask, 1)  # (b, 1, n)
        queries = ops.expand_dims(padding_mask, 2)  # (b, n, 1)
        pad = ops.logical_and(keys, queries)
        allowed = pad if allowed is None else ops.logical_and(allowed, pad)
    return allowed, penalty


def self_attention_biases(positional_mask, length, padding_mask=None):
    """``self_attention_allowed`` as additive biases, none of them per batch
    and per query pair: for a softmax over the keys of (b, n, n) logits
    that never builds a (b, n, n) mask.

    Returns ``(positional, keys, rows)``, each None when it would block
    nothing:

    - ``positional``: float32 (n, n), the mask's penalty at allowed pairs and
      the finite fill (-1e9) at blocked ones;
    - ``keys``: float32 (b, 1, n), 0 at real keys and the fill at padding;
    - ``rows``: float32 (b or 1, n, 1), 1 for a query that is real and has
      at least one allowed real key, else 0.

    Added to float32 logits, a blocked entry is at least 1e9 below the row's
    largest allowed one, so its softmax weight is exactly 0 (two fills add up
    to -2e9, still finite); a row with no allowed entry softmaxes to finite
    weights that the caller zeroes with ``rows`` (on the (b, n, d) result:
    this also zeroes padding queries).
    """
    allowed, penalty = (None, None)
    if positional_mask is not None:
        allowed, penalty = positional_mask.matrices(length)
    positional = penalty
    if allowed is not None:
        positional = ops.where(allowed, 0.0 if penalty is None else penalty, _FLOAT32_FILL)
    keys = rows = None
    if padding_mask is not None:
        real = ops.cast(padding_mask, "bool")
        keys = ops.expand_dims(ops.where(real, 0.0, _FLOAT32_FILL), 1)
        rows = ops.cast(real, "float32")  # a real query sees itself, unless...
        if allowed is not None:
            # ... the positional mask blocks it: count its allowed real keys,
            # (b, n_k) @ (n_k, n_q), no (b, n, n) tensor.
            seen = ops.matmul(rows, ops.transpose(ops.cast(allowed, "float32")))
            rows = rows * ops.cast(seen > 0.5, "float32")
        rows = ops.expand_dims(rows, -1)
    elif allowed is not None:
        rows = ops.expand_dims(ops.expand_dims(
            ops.cast(ops.any(allowed, axis=-1), "float32"), 0), -1)
    return positional, keys, rows


def zero_padding(x, padding_mask):
    """Set positions where ``padding_mask`` is False to zero (x: (b, n, ...))."""
    if padding_mask is None:
        return x
    m = ops.cast(padding_mask, x.dtype)
    while len(m.shape) < len(x.shape):
        m = ops.expand_dims(m, -1)
    return x * m


def split_heads(x, num_heads):
    """(b, n, d) -> (b, num_heads, n, d / num_heads)."""
    b, n, d = ops.shape(x)[0], ops.shape(x)[1], x.shape[-1]
    if d % num_heads:
        raise ValueError(f"width {d} is not divisible by num_heads={num_heads}.")
    x = ops.reshape(x, (b, n, num_heads, d // num_heads))
    return ops.transpose(x, (0, 2, 1, 3))


def merge_heads(x):
    """(b, h, n, d_h) -> (b, n, h * d_h)."""
    b, h, n, dh = ops.shape(x)[0], x.shape[1], ops.shape(x)[2], x.shape[-1]
    x = ops.transpose(x, (0, 2, 1, 3))
    return ops.reshape(x, (b, n, h * dh))


def multi_head_attention(
    query, key, value, num_heads, allowed=None, penalty=None, weights_dropout=None
):
    """Scaled dot-product attention over ``num_heads`` heads, through the core.

    ``logits[b, h, q, k] = <query_h[q], key_h[k]> / sqrt(d / h) + penalty``,
    blocked entries get zero weight (``masked_softmax``), and
    ``out[b, q] = concat_h(sum_k p[b, h, q, k] value_h[k])``. No projections:
    the calling layer owns them (dense, convolutional or none).

    Args:
        query: (b, n_q, d) float tensor.
        key: (b, n_k, d) float tensor.
        value: (b, n_k, d_v) float tensor; ``d_v`` divisible by ``num_heads``.
        num_heads: number of heads h (``d`` divisible by h).
        allowed: bool, broadcastable to (b, n_q, n_k) (e.g. from
            ``self_attention_allowed`` or ``key_allowed``), or None.
        penalty: float, broadcastable to (n_q, n_k), added to every head's
            logits, or None.
        weights_dropout: optional callable applied to the weights before
            they weight the values (e.g. a ``keras.layers.Dropout`` with its
            ``training`` flag bound).

    Returns:
        ``(outputs, weights)``: outputs (b, n_q, d_v) in ``value``'s dtype;
        weights float32 (b, h, n_q, n_k), zero rows where no key is allowed.
    """
    q = split_heads(query, num_heads)
    k = split_heads(key, num_heads)
    v = split_heads(value, num_heads)
    # Scale the queries before the product (smaller values in float16), then
    # take the softmax in float32 like every other attention.
    q = q * ops.cast(1.0 / float(q.shape[-1]) ** 0.5, q.dtype)
    logits = ops.cast(ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))), "float32")
    if penalty is not None:
        logits = logits + ops.cast(penalty, "float32")
    if allowed is not None:
        allowed = ops.expand_dims(ops.cast(allowed, "bool"), 1)  # (b, 1, n_q, n_k)
    weights = masked_softmax(logits, allowed, axis=-1)
    used = weights if weights_dropout is None else weights_dropout(weights)
    outputs = ops.matmul(ops.cast(used, v.dtype), v)
    return merge_heads(outputs), weights


def key_allowed(key_mask, num_queries=1):
    """Allowed matrix (b, num_queries, n_k) from a key padding mask (b, n_k):
    every query may see every real key (target / pooling attention)."""
    key_mask = ops.cast(key_mask, "bool")
    return ops.repeat(ops.expand_dims(key_mask, 1), num_queries, axis=1)
