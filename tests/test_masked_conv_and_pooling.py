"""MaskedConv1D and MaskedGlobalPooling1D: padding never leaks, empty texts are finite."""

import keras
import numpy as np
import pytest
from layer_checks import run_layer_test
from layer_checks import to_numpy

from keras_posattn.layers import MaskedConv1D
from keras_posattn.layers import MaskedGlobalPooling1D


def numpy_same_conv(x, kernel, bias):
    """'same' 1-D convolution of one unpadded sequence (TF's left pad (k-1)//2)."""
    k = kernel.shape[0]
    left = (k - 1) // 2
    padded = np.pad(x, [(left, k - 1 - left), (0, 0)])
    return np.stack([
        np.einsum("kc,kcf->f", padded[t:t + k], kernel) + bias for t in range(x.shape[0])
    ])


@pytest.mark.parametrize("kernel_size", [3, 4])
def test_conv_matches_unpadded_numpy(kernel_size):
    rng = np.random.default_rng(0)
    layer = MaskedConv1D(5, kernel_size, activation="relu")
    real = rng.normal(size=(4, 3)).astype("float32")
    x = np.concatenate([real, rng.normal(size=(6, 3)).astype("float32") * 9])[None]  # noisy padding
    mask = np.array([[True] * 4 + [False] * 6])
    out = to_numpy(layer(x, mask=mask))
    kernel, bias = (to_numpy(w) for w in layer.weights)
    expected = np.maximum(numpy_same_conv(real, kernel, bias), 0.0)
    np.testing.assert_allclose(out[0, :4], expected, atol=1e-5)
    assert np.all(out[0, 4:] == 0)
    # More padding changes nothing at real positions.
    longer = np.concatenate([x, np.ones((1, 20, 3), "float32")], axis=1)
    mask2 = np.concatenate([mask, np.zeros((1, 20), bool)], axis=1)
    np.testing.assert_allclose(to_numpy(layer(longer, mask=mask2))[0, :4], out[0, :4], atol=1e-6)


def test_conv_layer_checks():
    x = np.random.default_rng(1).normal(size=(2, 6, 4)).astype("float32")
    mask = np.array([[1] * 6, [1] * 2 + [0] * 4], bool)
    run_layer_test(lambda: MaskedConv1D(3, 3), x, mask=mask, expected_output_shape=(2, 6, 3),
                   expected_num_trainable_weights=2)


def test_conv_keeps_the_mask_in_a_functional_model():
    ids = keras.Input(shape=(None,), dtype="int32")
    x = keras.layers.Embedding(10, 4, mask_zero=True)(ids)
    x = MaskedConv1D(4, 3)(x)
    assert x._keras_mask is not None


@pytest.mark.parametrize("kwargs", [{"strides": 2}, {"padding": "valid"}])
def test_conv_rejects_misaligning_options(kwargs):
    with pytest.raises(ValueError):
        MaskedConv1D(3, 3, **kwargs)


@pytest.mark.parametrize("method", ["max", "average"])
def test_pooling_matches_numpy_and_ignores_padding(method):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(3, 5, 4)).astype("float32")
    x[:, 3:] = 100.0  # padding values that would win a stock max
    mask = np.array([[1, 1, 1, 0, 0], [1, 0, 0, 0, 0], [0, 0, 0, 0, 0]], bool)
    out = to_numpy(MaskedGlobalPooling1D(method)(x, mask=mask))
    for i in range(3):
        real = x[i][mask[i]]
        if len(real) == 0:
            expected = np.zeros(4)
        else:
            expected = real.max(0) if method == "max" else real.mean(0)
        np.testing.assert_allclose(out[i], expected, atol=1e-6)


@pytest.mark.parametrize("method", ["max", "average"])
def test_pooling_layer_checks_and_empty_gradient(method):
    x = np.random.default_rng(3).normal(size=(2, 5, 4)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [0, 0, 0, 0, 0]], bool)
    layer, outputs = run_layer_test(lambda: MaskedGlobalPooling1D(method), x, mask=mask,
                                    expected_output_shape=(2, 4), run_training=False)
    assert np.all(to_numpy(outputs)[1] == 0)
    import tensorflow as tf
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = layer(xt, mask=mask)
    grad = tape.gradient(y, xt).numpy()
    assert np.all(np.isfinite(grad)) and np.all(grad[1] == 0)


@pytest.mark.parametrize("dtype_policy", ["mixed_float16", "mixed_bfloat16"], indirect=True)
@pytest.mark.parametrize("method", ["max", "average"])
def test_pooling_and_conv_mixed_precision(dtype_policy, method):
    x = np.random.default_rng(4).normal(size=(2, 5, 4)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [0, 0, 0, 0, 0]], bool)
    h = MaskedConv1D(4, 3)(x, mask=mask)
    out = to_numpy(MaskedGlobalPooling1D(method)(h, mask=mask))
    assert np.all(np.isfinite(out)) and np.all(out[1] == 0)
