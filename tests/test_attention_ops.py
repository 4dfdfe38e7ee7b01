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
