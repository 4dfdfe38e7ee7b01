"""Padding checks shared by the tests of layers over padded sequences.

Real tokens come first (right padding); padding positions hold garbage that
must never reach a real position's output.
"""

import keras
import numpy as np
from layer_checks import as_list
from layer_checks import gradients
from layer_checks import randomize_weights
from layer_checks import to_numpy


def built(layer, x, seed=3):
    """``layer`` called once on ``x`` and given random weights (randomize_weights)."""
    layer(x)
    randomize_weights(layer, seed=seed)
    return layer


def padded_batch(lengths, n, width, seed=0, garbage=10.0):
    """Random (len(lengths), n, width) float32 inputs and their bool mask; the
    padding holds N(0, garbage^2) values."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(len(lengths), n, width)).astype("float32")
    mask = np.arange(n)[None] < np.array(lengths)[:, None]
    x[~mask] = rng.normal(size=(int((~mask).sum()), width)) * garbage
    return x, mask


def with_padding(real, extra, seed=0, garbage=10.0):
    """``real`` (1, n, d) followed by ``extra`` garbage positions, and the mask."""
    length, width = real.shape[1], real.shape[2]
    padding, _ = padded_batch([0], extra, width, seed=seed, garbage=garbage)
    x = np.concatenate([real, padding], axis=1)
    return x, np.arange(length + extra)[None] < length


def check_padding_invariance(layer, real, extras=(1, 40), atol=1e-6):
    """A per-position layer gives ``real`` (1, n, d) the outputs of its
    unpadded call however much padding follows, and zeros at padding."""
    length = real.shape[1]
    unpadded = to_numpy(layer(real))
    for extra in extras:
        x, mask = with_padding(real, extra, seed=extra)
        out = to_numpy(layer(x, mask=mask))
        np.testing.assert_allclose(out[:, :length], unpadded, atol=atol)
        assert np.all(out[:, length:] == 0)


def check_mask_passes_through(layer, width):
    """In a functional model, the padding mask of an Embedding survives ``layer``."""
    ids = keras.Input(shape=(None,), dtype="int32")
    h = keras.layers.Embedding(10, width, mask_zero=True)(ids)
    assert layer(h)._keras_mask is not None


def check_dropout_only_in_training(layer, x, mask):
    """Dropout is off by default and with training=False, on with training=True."""
    default = to_numpy(layer(x, mask=mask))
    np.testing.assert_array_equal(default, to_numpy(layer(x, mask=mask, training=False)))
    assert not np.allclose(default, to_numpy(layer(x, mask=mask, training=True)))


def check_all_padding_sequence(make_layer, x, mask, dtype_policy, tol=5e-2, call_kwargs=None):
    """Under ``dtype_policy`` (already set), ``make_layer()`` with the weights of a
    float32 copy: every output (the layer's, then float32 attention scores) is
    finite, zero for a sequence with no real token, and close to float32's;
    every gradient is finite and padding inputs get exactly zero gradient.

    Returns the outputs as float32 NumPy arrays.
    """
    call_kwargs = dict(call_kwargs or {})
    keras.mixed_precision.set_global_policy("float32")
    reference = built(make_layer(), x)
    expected = [to_numpy(o) for o in as_list(reference(x, mask=mask, **call_kwargs))]
    keras.mixed_precision.set_global_policy(dtype_policy)

    layer = make_layer()
    layer(x)
    layer.set_weights(reference.get_weights())
    outputs = as_list(layer(x, mask=mask, **call_kwargs))
    assert keras.backend.standardize_dtype(outputs[0].dtype) == layer.compute_dtype
    assert all(o.dtype == "float32" for o in outputs[1:])  # scores stay float32
    empty = ~mask.any(axis=1)
    assert empty.any(), "the batch needs a sequence with no real token"
    outputs = [to_numpy(o).astype("float32") for o in outputs]
    if dtype_policy == "float32":
        tol = 1e-5
    for got, want in zip(outputs, expected):
        assert np.all(np.isfinite(got)) and np.all(got[empty] == 0)
        np.testing.assert_allclose(got, want, atol=tol, rtol=tol)

    input_grads, weight_grads = gradients(layer, x, mask=mask)
    for g in input_grads + weight_grads:
        assert g is not None and np.all(np.isfinite(g))
    assert np.all(input_grads[0][~mask] == 0)
    return outputs
