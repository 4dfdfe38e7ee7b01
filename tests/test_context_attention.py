"""ContextAttention against a NumPy implementation of HAN's attention
(Yang et al. 2016, eqs. 5-7): u = tanh(W h + b), alpha = softmax(u . u_w),
s = sum alpha h, computed on each sequence's real positions alone."""

import doctest

import keras
import numpy as np
import pytest
from layer_checks import run_layer_test
from layer_checks import to_numpy
from sequence_checks import built
from sequence_checks import check_all_padding_sequence
from sequence_checks import padded_batch as padded_sequences
from sequence_checks import with_padding

from keras_posattn.layers import ContextAttention
from keras_posattn.layers import context_attention

D_IN, UNITS = 6, 4


def padded_batch(lengths, n, seed=0, garbage=10.0):
    return padded_sequences(lengths, n, D_IN, seed=seed, garbage=garbage)


def reference(layer, h):
    """Eqs. 5-7 for one unpadded sequence h (n, d_in): s (d_in,), alpha (n,)."""
    h = h.astype("float64")
    kernel, bias, context = (to_numpy(w).astype("float64")
                             for w in (layer.kernel, layer.bias, layer.context))
    u = np.tanh(h @ kernel + bias)
    logits = u @ context
    alpha = np.exp(logits - logits.max())
    alpha /= alpha.sum()
    return alpha @ h, alpha


def test_matches_numpy_reference_on_each_sequence():
    x, mask = padded_batch([6, 3, 1], n=6)
    layer = built(ContextAttention(UNITS), x)
    pooled, alpha = (to_numpy(t) for t in layer(x, mask=mask, return_attention_scores=True))
    assert pooled.shape == (3, D_IN) and alpha.shape == (3, 6)
    for b, length in enumerate(mask.sum(axis=1)):
        ref_pooled, ref_alpha = reference(layer, x[b, :length])
        np.testing.assert_allclose(pooled[b], ref_pooled, atol=1e-5, rtol=1e-5)
        np.testing.assert_allclose(alpha[b, :length], ref_alpha, atol=1e-6)
        assert np.all(alpha[b, length:] == 0)
    # a one-position sequence pools to itself
    np.testing.assert_allclose(pooled[2], x[2, 0], atol=1e-6)


def test_padding_invariance():
    real, _ = padded_batch([4], n=4, seed=1)
    layer = built(ContextAttention(UNITS), real)
    unpadded = [to_numpy(t)[0] for t in layer(real, return_attention_scores=True)]
    for extra in (1, 40):
        x, mask = with_padding(real, extra, garbage=1e4)
        pooled, alpha = (to_numpy(t)[0] for t in layer(x, mask=mask, return_attention_scores=True))
        np.testing.assert_allclose(pooled, unpadded[0], atol=1e-5)
        np.testing.assert_allclose(alpha[:4], unpadded[1], atol=1e-6)
        assert np.all(alpha[4:] == 0)


@pytest.mark.parametrize(
    "dtype_policy", ["float32", "mixed_float16", "mixed_bfloat16"], indirect=True
)
def test_all_padding_sequence_gives_zeros_and_finite_gradients(dtype_policy):
    x, mask = padded_batch([5, 0, 2], n=5, seed=2, garbage=1.0)
    x[1] = 1e3
    check_all_padding_sequence(lambda: ContextAttention(UNITS), x, mask, dtype_policy,
                               call_kwargs={"return_attention_scores": True})


def test_standard_layer_checks():
    x, mask = padded_batch([5, 2], n=5, seed=4, garbage=1.0)
    run_layer_test(
        lambda: ContextAttention(UNITS, kernel_regularizer="l2",
                                 context_initializer="glorot_uniform"),
        x, mask=mask, call_kwargs={"return_attention_scores": True},
        expected_output_shape=[(2, D_IN), (2, 5)],
        expected_num_trainable_weights=3,  # W, b, u_w
    )


def test_standard_layer_checks_without_mask():
    x, _ = padded_batch([3, 3], n=3, seed=5)
    run_layer_test(lambda: ContextAttention(2), x, expected_output_shape=(2, D_IN))


def test_the_keras_mask_is_used_and_stops_here():
    ids = keras.Input(shape=(None,), dtype="int32")
    h = keras.layers.Embedding(10, D_IN, mask_zero=True)(ids)
    pooled = ContextAttention(UNITS)(h)
    assert getattr(pooled, "_keras_mask", None) is None
    model = keras.Model(ids, pooled)
    short, long = np.array([[3, 4, 5]]), np.array([[3, 4, 5] + [0] * 20])
    np.testing.assert_allclose(to_numpy(model(short)), to_numpy(model(long)), atol=1e-6)


def test_errors_and_docstring_example():
    with pytest.raises(ValueError, match="units must be >= 1"):
        ContextAttention(0)
    assert doctest.testmod(context_attention).failed == 0
