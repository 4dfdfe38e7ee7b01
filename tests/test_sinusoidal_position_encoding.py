"""SinusoidalPositionEncoding against the Transformer's formula, both layouts.

PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d));
SPE-CNN adds it to the embeddings: x'_pos = x_pos + PE(pos).
"""

import doctest
import math

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
from test_position_embedding import reference as add_table_at_real_positions

from keras_posattn.layers import SinusoidalPositionEncoding
from keras_posattn.layers import sinusoidal_position_encoding


def np_encoding(n, d, layout, base=10000.0):
    """PE (n, d) written out position by position, channel by channel."""
    pe = np.zeros((n, d))
    sines = (d + 1) // 2  # channels 2i with 2i < d
    for pos in range(n):
        for i in range(sines):
            angle = pos / base ** (2 * i / d)
            if layout == "interleaved":
                pe[pos, 2 * i] = math.sin(angle)
                if 2 * i + 1 < d:
                    pe[pos, 2 * i + 1] = math.cos(angle)
            else:  # all sines, then all cosines
                pe[pos, i] = math.sin(angle)
                if i < d // 2:
                    pe[pos, sines + i] = math.cos(angle)
    return pe


@pytest.mark.parametrize("layout", ["interleaved", "concatenated"])
@pytest.mark.parametrize("d", [6, 7, 1])
def test_matches_numpy_formula(layout, d):
    n = 60  # long enough for the slow channels to move
    x, mask = padded_batch([n, 9, 0], n, d)
    layer = SinusoidalPositionEncoding(layout=layout, scale=0.5)
    out = to_numpy(layer(x, mask=mask))
    table = 0.5 * np_encoding(n, d, layout)
    np.testing.assert_allclose(out, add_table_at_real_positions(x, mask, table), atol=1e-5)
    np.testing.assert_allclose(to_numpy(layer.encoding(n, d)), table / 0.5, atol=1e-5)


def test_the_first_values_of_the_formula_written_out():
    # d = 4, pos = 1: sin(1), cos(1), sin(1/100), cos(1/100)
    pe = to_numpy(SinusoidalPositionEncoding().encoding(2, 4))
    np.testing.assert_allclose(pe[0], [0, 1, 0, 1], atol=1e-7)
    np.testing.assert_allclose(pe[1], [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)],
                               atol=1e-6)
    concatenated = to_numpy(SinusoidalPositionEncoding(layout="concatenated").encoding(2, 4))
    np.testing.assert_allclose(concatenated[1], pe[1][[0, 2, 1, 3]], atol=1e-7)


def test_padding_invariance_and_mask_passes_through():
    real, _ = padded_batch([5], 5, 6, seed=1)
    check_padding_invariance(SinusoidalPositionEncoding(max_wavelength=100), real)
    check_mask_passes_through(SinusoidalPositionEncoding(), 6)


@pytest.mark.parametrize(
    "dtype_policy", ["float32", "mixed_float16", "mixed_bfloat16"], indirect=True
)
def test_all_padding_sequence_is_zero_with_zero_gradients(dtype_policy):
    n, d = 30, 5
    x, mask = padded_batch([7, 0], n, d, seed=2)
    layer = SinusoidalPositionEncoding()
    out = layer(x, mask=mask)
    assert keras.backend.standardize_dtype(out.dtype) == layer.compute_dtype
    out = to_numpy(out).astype("float32")
    assert np.all(out[1] == 0) and np.all(out[~mask] == 0)
    expected = add_table_at_real_positions(x, mask, np_encoding(n, d, "interleaved"))
    tol = 1e-5 if dtype_policy == "float32" else 3e-2
    np.testing.assert_allclose(out, expected, atol=tol, rtol=tol)
    (input_grad,), weight_grads = gradients(layer, x, mask=mask)
    assert weight_grads == []
    assert np.all(np.isfinite(input_grad)) and np.all(input_grad[~mask] == 0)


@pytest.mark.parametrize("layout", ["interleaved", "concatenated"])
def test_standard_layer_checks(layout):
    x, mask = padded_batch([4, 2], 4, 6, seed=3)
    run_layer_test(
        lambda: SinusoidalPositionEncoding(max_wavelength=1000, layout=layout, scale=2.0),
        x,
        mask=mask,
        expected_output_shape=(2, 4, 6),
        expected_num_trainable_weights=0,
        expected_num_non_trainable_weights=0,
    )


def test_dynamic_length_in_a_tf_function():
    layer = SinusoidalPositionEncoding(layout="concatenated")
    fn = tf.function(lambda x: layer(x), input_signature=[tf.TensorSpec((None, None, 4))])
    for n in (3, 11):
        x = np.zeros((1, n, 4), "float32")
        np.testing.assert_allclose(to_numpy(fn(x))[0], np_encoding(n, 4, "concatenated"),
                                   atol=1e-6)


def test_errors_and_docstring_example():
    with pytest.raises(ValueError, match="layout"):
        SinusoidalPositionEncoding(layout="sincos")
    with pytest.raises(ValueError, match="max_wavelength"):
        SinusoidalPositionEncoding(max_wavelength=0)
    assert doctest.testmod(sinusoidal_position_encoding).failed == 0
