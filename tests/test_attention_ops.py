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
