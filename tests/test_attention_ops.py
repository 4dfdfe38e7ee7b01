"""The masking core: fully blocked rows, and masks kept at their own size."""

import numpy as np
import tensorflow as tf

from keras_posattn.attention_ops import masked_softmax


def test_blocked_entries_get_zero_and_empty_rows_are_zero():
    logits = np.random.default_rng(0).normal(size=(2, 3, 4)).astype("float32")
    allowed = np.ones((2, 3, 4), bool)
    allowed[0, 1, 2] = False
    allowed[1, 2, :] = False  # a row with no allowed key
    weights = masked_softmax(logits, allowed).numpy()
    assert weights[0, 1, 2] == 0.0
    assert np.all(weights[1, 2] == 0.0)
    expected = np.exp(logits[0, 1, [0, 1, 3]])
    np.testing.assert_allclose(weights[0, 1, [0, 1, 3]], expected / expected.sum(), rtol=1e-6)


def test_mask_is_broadcast_lazily():
    """A (b, n, n, 1) mask for (b, n, n, d) logits (the multi-dimensional
    compatibility) is never expanded to a (b, n, n, d) tensor in the graph."""
    b, n, d = 2, 5, 8
    fn = tf.function(lambda logits, allowed: masked_softmax(logits, allowed, axis=2))
    graph = fn.get_concrete_function(
        tf.TensorSpec((b, n, n, d), tf.float32), tf.TensorSpec((b, n, n, 1), tf.bool)
    ).graph
    full = [
        op.name
        for op in graph.get_operations()
        for out in op.outputs
        if out.dtype == tf.bool and out.shape.rank == 4 and out.shape[-1] == d
    ]
    assert not full, f"mask materialised at the logits' shape by {full}"
    weights = fn(tf.zeros((b, n, n, d)), tf.ones((b, n, n, 1), tf.bool)).numpy()
    np.testing.assert_allclose(weights.sum(axis=2), 1.0, rtol=1e-6)


def _numpy_multi_head(q, k, v, h, allowed):
    b, nq, d = q.shape
    dh, dv = d // h, v.shape[-1] // h
    out = np.zeros((b, nq, v.shape[-1]))
    weights = np.zeros((b, h, nq, k.shape[1]))
    for bi in range(b):
        for hi in range(h):
            qs, ks = q[bi, :, hi * dh:(hi + 1) * dh], k[bi, :, hi * dh:(hi + 1) * dh]
            vs = v[bi, :, hi * dv:(hi + 1) * dv]
            logits = qs @ ks.T / np.sqrt(dh)
            for qi in range(nq):
                ok = allowed[bi, qi]
                if not ok.any():
                    continue
                e = np.exp(logits[qi][ok] - logits[qi][ok].max())
                weights[bi, hi, qi, ok] = e / e.sum()
            out[bi, :, hi * dv:(hi + 1) * dv] = weights[bi, hi] @ vs
    return out, weights


def test_multi_head_attention_matches_numpy():
    from keras_posattn.attention_ops import multi_head_attention, self_attention_allowed

    rng = np.random.default_rng(1)
    q, k = rng.normal(size=(2, 5, 8)), rng.normal(size=(2, 5, 8))
    v = rng.normal(size=(2, 5, 12))
    padding = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    allowed, _ = self_attention_allowed(None, 5, padding)
    allowed = np.broadcast_to(np.asarray(allowed), (2, 5, 5))
    out, weights = multi_head_attention(
        q.astype("float32"), k.astype("float32"), v.astype("float32"), 4, allowed
    )
    ref_out, ref_weights = _numpy_multi_head(q, k, v, 4, allowed)
    np.testing.assert_allclose(np.asarray(weights), ref_weights, atol=1e-5)
    np.testing.assert_allclose(np.asarray(out), ref_out, atol=1e-5)
    assert np.all(np.asarray(weights)[0, :, 3:] == 0)  # padding queries: zero rows


def _numpy_masked_softmax(logits, allowed, axis):
    logits, allowed = np.moveaxis(logits, axis, -1), np.moveaxis(allowed, axis, -1)
    out = np.zeros_like(logits, dtype="float64")
    for index in np.ndindex(logits.shape[:-1]):
        ok = allowed[index]
        if ok.any():
            e = np.exp(logits[index][ok] - logits[index][ok].max())
            out[index][ok] = e / e.sum()
    return np.moveaxis(out, -1, axis)


def test_every_axis_matches_numpy_with_blocked_rows_and_finite_gradients():
    """The written-out softmax of a non-last axis (the pooling's time axis,
    the M-D attention's key axis, the fusion's source axis) against NumPy:
    blocked entries 0, a fully blocked row 0 with a zero, finite gradient."""
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(2, 4, 3, 5)).astype("float32") * 4
    for axis in (1, 2, 3, -1):
        allowed = rng.random((2, 4, 3, 5)) > 0.3
        blocked = [slice(None)] * 4
        blocked[axis], blocked[0] = slice(None), 1  # every entry of some rows
        other = 2 if axis in (1, 3, -1) else 1
        blocked[other] = 0
        allowed[tuple(blocked)] = False
        x = tf.constant(logits)
        with tf.GradientTape() as tape:
            tape.watch(x)
            weights = masked_softmax(x, allowed, axis=axis)
            loss = tf.reduce_sum(weights * tf.constant(rng.normal(size=logits.shape), tf.float32))
        grad = tape.gradient(loss, x).numpy()
        np.testing.assert_allclose(weights.numpy(), _numpy_masked_softmax(logits, allowed, axis),
                                   atol=1e-6)
        assert np.all(weights.numpy()[tuple(blocked)] == 0.0)
        assert np.all(np.isfinite(grad)) and np.all(grad[tuple(blocked)] == 0.0)
    # Without a mask too; and no transpose in the graph of a middle-axis softmax.
    np.testing.assert_allclose(masked_softmax(logits, axis=1).numpy(),
                               _numpy_masked_softmax(logits, np.ones_like(logits, bool), 1),
                               atol=1e-6)
    graph = tf.function(lambda t: masked_softmax(t, axis=1)).get_concrete_function(
        tf.TensorSpec((2, 4, 3, 5), tf.float32)).graph
    assert not [op.type for op in graph.get_operations() if "Transpose" in op.type]


def test_exponentials_without_row_zeroing_leave_blocked_rows_to_the_caller():
    """``zero_blocked_rows=False``: the rows that have an allowed entry are
    exactly ``masked_exponentials``' (blocked entries 0), a row with none is
    all ones, and ``any_allowed`` says which rows the caller must zero."""
    from keras_posattn.attention_ops import any_allowed, masked_exponentials

    rng = np.random.default_rng(5)
    logits = rng.normal(size=(2, 4, 6)).astype("float32") * 3
    allowed = rng.random((2, 4, 6)) > 0.4
    allowed[:, :, 0] = True
    allowed[1, 2, :] = False  # no allowed key
    zeroed, zeroed_total = masked_exponentials(logits, allowed, axis=-1)
    kept, kept_total = masked_exponentials(logits, allowed, axis=-1, zero_blocked_rows=False)
    rows = any_allowed(allowed, axis=-1).numpy()
    assert rows.shape == (2, 4, 1) and rows[1, 2, 0] == 0.0 and rows.sum() == 7
    live = np.broadcast_to(rows > 0, logits.shape)
    np.testing.assert_array_equal(kept.numpy()[live], zeroed.numpy()[live])
    np.testing.assert_array_equal(kept.numpy()[~allowed & live], 0.0)
    np.testing.assert_array_equal(kept.numpy()[1, 2], 1.0)
    assert kept_total.numpy()[1, 2, 0] == 6.0 and zeroed_total.numpy()[1, 2, 0] == 1.0
    np.testing.assert_allclose((kept / kept_total * rows).numpy(),
                               _numpy_masked_softmax(logits, allowed, -1), atol=1e-6)
    assert any_allowed(None, axis=-1) is None


def test_additive_biases_mask_as_the_allowed_matrix_does():
    """``self_attention_biases``: softmax(logits + positional + keys) * rows
    equals ``masked_softmax`` under ``self_attention_allowed``'s matrix (and
    its penalty) for every kind of positional mask, with padding and with
    queries that see no key; the biases are (n, n) and (b, 1, n)."""
    from keras_posattn import masks
    from keras_posattn.attention_ops import self_attention_allowed, self_attention_biases

    rng = np.random.default_rng(11)
    b, n = 3, 7
    logits = tf.constant(rng.normal(size=(b, n, n)).astype("float32") * 3)
    padding = np.arange(n)[None, :] < np.array([[7], [4], [1]])
    for spec in (None, "fw", "bw", "fw+sd", "bw+sd", "fa2", "sd"):
        mask = None if spec is None else masks.parse(spec)
        for pad in (padding, None):
            allowed, penalty = self_attention_allowed(mask, n, pad)
            x = logits if penalty is None else logits + penalty
            expected = masked_softmax(x, allowed, axis=-1).numpy()
            positional, keys, rows = self_attention_biases(mask, n, pad)
            y = logits
            if positional is not None:
                assert tuple(positional.shape) == (n, n)
                y = y + positional
            if keys is not None:
                assert tuple(keys.shape) == (b, 1, n)
                y = y + keys
            got = tf.nn.softmax(y, axis=-1).numpy()
            if rows is not None:
                got = got * rows.numpy()
            np.testing.assert_allclose(got, expected, atol=1e-6, err_msg=f"{spec} {pad is None}")
            if allowed is not None:  # blocked entries exactly 0, not merely small
                assert np.all(got[~np.broadcast_to(allowed.numpy(), got.shape)] == 0.0)
    # A backward mask's first query (no key before it) sees nothing, and
    # neither does any query of a one-token text.
    _, _, rows = self_attention_biases(masks.parse("bw"), n, padding)
    assert rows.numpy()[:, 0, 0].tolist() == [0.0, 0.0, 0.0]
    assert rows.numpy()[2, :, 0].tolist() == [0.0] * n
