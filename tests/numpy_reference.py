"""NumPy building blocks of the whole-model reference tests (float64), and
the check that runs a model against its reference."""

import numpy as np
from layer_checks import to_numpy


def elu(x):
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0)))


def masked_softmax(x, allowed, axis):
    """Softmax over ``axis`` of the allowed entries; blocked entries and rows
    with no allowed entry get zero weight."""
    x = np.where(allowed, x, -np.inf)
    top = np.max(np.where(allowed, x, -1e30), axis=axis, keepdims=True)
    e = np.where(allowed, np.exp(x - top), 0.0)
    total = e.sum(axis=axis, keepdims=True)
    return np.where(total > 0, e / np.where(total > 0, total, 1.0), 0.0)


def check_against_reference(model, reference, lengths, vocabulary_size, seed=0, atol=1e-4,
                            rtol=1e-4):
    """Give every weight of ``model`` N(0, 0.5^2) values (so zero biases hide
    nothing; the embedding must be ``"all"`` or ``"none"``), then compare its
    logits on right-padded texts of ``lengths`` tokens with
    ``reference(model, ids)``."""
    rng = np.random.default_rng(seed)
    for weight in model.weights:
        weight.assign(rng.normal(0.0, 0.5, size=tuple(weight.shape)).astype("float32"))
    ids = np.zeros((len(lengths), max(lengths)), "int32")
    for i, n in enumerate(lengths):
        ids[i, :n] = rng.integers(2, vocabulary_size, size=n)
    np.testing.assert_allclose(to_numpy(model(ids, training=False)), reference(model, ids),
                               atol=atol, rtol=rtol)
