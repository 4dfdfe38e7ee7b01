"""PositionEmbedding: out = inputs + P[:n] at real positions (HCAN section 3.6),
zero at padding; sequences longer than max_length are errors everywhere."""

import doctest

import keras
import numpy as np
import pytest
import tensorflow as tf
from layer_checks import gradients
from layer_checks import run_layer_test
from layer_checks import to_numpy
from sequence_checks import check_mask_passes_through
from sequence_checks import check_padding_invariance
from sequence_checks import padded_batch

from keras_posattn.layers import PositionEmbedding
from keras_posattn.layers import position_embedding

D = 6


def reference(x, mask, table):
    """Loop over sequences and positions: x + P[i] where real, else 0."""
    out = np.zeros_like(x, dtype="float64")
    for b in range(x.shape[0]):
        for i in range(x.shape[1]):
            if mask[b, i]:
                out[b, i] = x[b, i] + table[i]
    return out


def test_matches_numpy_reference_and_padding_is_zero():
    x, mask = padded_batch([5, 2, 0], 5, D)
    layer = PositionEmbedding(max_length=8)
    out = to_numpy(layer(x, mask=mask))
    table = to_numpy(layer.embeddings)
    assert table.shape == (8, D)
    np.testing.assert_allclose(out, reference(x, mask, table), atol=1e-6)
    # Without a mask every position gets its embedding.
    np.testing.assert_allclose(to_numpy(layer(x)), x + table[:5], atol=1e-6)


def test_default_initializer_is_the_released_codes_normal_0_1():
    layer = PositionEmbedding(max_length=400)
    layer.build((None, None, 50))
    table = to_numpy(layer.embeddings)
    assert abs(table.mean()) < 0.01 and abs(table.std() - 0.1) < 0.01


def test_padding_invariance_and_mask_passes_through():
    real, _ = padded_batch([4], 4, D, seed=1)
    check_padding_invariance(PositionEmbedding(max_length=50), real)
    check_mask_passes_through(PositionEmbedding(10), D)


@pytest.mark.parametrize(
    "dtype_policy", ["float32", "mixed_float16", "mixed_bfloat16"], indirect=True
)
def test_all_padding_sequence_is_zero_with_zero_gradients(dtype_policy):
    x, mask = padded_batch([3, 0], 4, D, seed=2, garbage=1.0)
    layer = PositionEmbedding(max_length=6)
    out = layer(x, mask=mask)
    assert keras.backend.standardize_dtype(out.dtype) == layer.compute_dtype
    assert layer.embeddings.dtype == "float32"
    out = to_numpy(out).astype("float32")
    assert np.all(out[1] == 0) and np.all(out[~mask] == 0)
    tol = 1e-6 if dtype_policy == "float32" else 2e-2
    np.testing.assert_allclose(out, reference(x, mask, to_numpy(layer.embeddings)), atol=tol)
    (input_grad,), (table_grad,) = gradients(layer, x, mask=mask)
    assert np.all(np.isfinite(input_grad)) and np.all(np.isfinite(table_grad))
    assert np.all(input_grad[~mask] == 0)
    assert np.all(table_grad[3:] == 0)  # no real token sits at positions 3, 4, 5


def test_standard_layer_checks():
    x, mask = padded_batch([5, 3], 5, D, seed=3, garbage=1.0)
    run_layer_test(
        lambda: PositionEmbedding(max_length=7, initializer="glorot_uniform"),
        x,
        mask=mask,
        expected_output_shape=(2, 5, D),
        expected_num_trainable_weights=1,
    )


def test_too_long_with_a_static_length_raises_naming_max_length():
    layer = PositionEmbedding(max_length=5)
    with pytest.raises(ValueError, match="more than max_length=5"):
        layer(np.zeros((1, 6, D), "float32"))
    with pytest.raises(ValueError, match="max_length=5"):
        PositionEmbedding(max_length=5)(keras.Input((9, D)))
    layer(np.zeros((1, 5, D), "float32"))  # exactly max_length is fine
    with pytest.raises(ValueError, match="more than max_length=5"):
        layer(np.zeros((1, 6, D), "float32"))  # built layers check too


def _dynamic_call(layer, jit_compile):
    return tf.function(
        lambda x: layer(x),
        jit_compile=jit_compile,
        input_signature=[tf.TensorSpec((None, None, D), tf.float32)],
    )


def test_too_long_in_a_tf_function_raises_naming_max_length():
    layer = PositionEmbedding(max_length=5)
    fn = _dynamic_call(layer, jit_compile=False)
    x = np.ones((2, 4, D), "float32")
    np.testing.assert_allclose(to_numpy(fn(x)), to_numpy(layer(x)), atol=1e-6)
    with pytest.raises(tf.errors.InvalidArgumentError, match="max_length=5"):
        fn(np.ones((2, 7, D), "float32"))


@pytest.mark.parametrize("max_length", [5, 1])
def test_too_long_under_xla_fails_at_the_slice_never_silently(max_length):
    # XLA drops the assertion (documented); the explicit-size slice still
    # refuses, also where max_length=1 would broadcast a clamped table[:n].
    layer = PositionEmbedding(max_length=max_length)
    fn = _dynamic_call(layer, jit_compile=True)
    x = np.ones((2, max_length, D), "float32")
    np.testing.assert_allclose(to_numpy(fn(x)), to_numpy(layer(x)), atol=1e-6)
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=rf"Expected size\[0\] in \[0, {max_length}\], but got 7",
    ):
        fn(np.ones((2, 7, D), "float32"))


def test_errors_and_docstring_example():
    with pytest.raises(ValueError, match="max_length"):
        PositionEmbedding(max_length=0)
    assert doctest.testmod(position_embedding).failed == 0
