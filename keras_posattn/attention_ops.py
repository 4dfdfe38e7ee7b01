"""The attention and masking core every layer of the library goes through.

Two rules are enforced here once, so no layer has to remember them:

1. Blocked entries (positional masks, padding keys) get exactly zero weight,
   and a row with no allowed entry gives all-zero weights and a zero,
   finite gradient - never NaN. Softmax is taken in float32 with a finite
   fill value, whatever the layer's compute dtype (float16 overflows at
   -1e9), then the result is multiplied by the allowed mask.
2. Padding keys are always blocked; padding queries get zero rows.
"""

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
    """
    logits = ops.cast(logits, "float32")
    if allowed is None:
        return ops.softmax(logits, axis=axis)
    # ``allowed`` is broadcast lazily by ``where`` and the product below: a
    # (b, n, n, 1) mask for (b, n, n, d) logits stays that small, and so does
    # the float copy kept for the backward pass.
    allowed = ops.cast(allowed, "bool")
    filled = ops.where(allowed, logits, _FLOAT32_FILL)
    weights = ops.softmax(filled, axis=axis)
    # A fully blocked row was softmax-ed to uniform: multiply it back to zero.
    return weights * ops.cast(allowed, "float32")


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


def zero_padding(x, padding_mask):
    """Set positions where ``padding_mask`` is False to zero (x: (b, n, ...))."""
    if padding_mask is None:
        return x
    m = ops.cast(padding_mask, x.dtype)
    while len(m.shape) < len(x.shape):
        m = ops.expand_dims(m, -1)
    return x * m
