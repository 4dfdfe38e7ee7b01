"""FusionGate against DiSAN's fusion gate, written in NumPy.

F = sigmoid(W_1 s + W_2 h + b), u = F * h + (1 - F) * s (Shen et al. 2018).
"""

import keras
import numpy as np
import pytest
from layer_checks import gradients
from layer_checks import randomize_weights
from layer_checks import run_layer_test
from layer_checks import to_numpy

from keras_posattn.layers import FusionGate

D = 8


def reference(s, h, W1, W2, b, padding=None):
    """Position by position; W1, W2 act on column vectors (the paper's form)."""
    s, h = s.astype("float64"), h.astype("float64")
    B, n, d = h.shape
    out = np.zeros((B, n, d))
    for i in range(B):
        for t in range(n):
            if padding is not None and not padding[i, t]:
                continue
            F = 1.0 / (1.0 + np.exp(-(W1 @ s[i, t] + W2 @ h[i, t] + b)))
            out[i, t] = F * h[i, t] + (1.0 - F) * s[i, t]
    return out


def random_pair(batch=2, n=5, d=D, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(batch, n, d)).astype("float32") for _ in range(2)]


def built_layer(inputs, seed=1):
    layer = FusionGate()
    layer(inputs)
    randomize_weights(layer, seed=seed, scale=0.8)
    return layer


def test_matches_numpy_reference():
    s, h = random_pair()
    padding = np.array([[1] * 5, [1] * 2 + [0] * 3], dtype=bool)
    layer = built_layer([s, h])
    out = to_numpy(layer([s, h], mask=[padding, padding]))
    # Keras kernels act on row vectors: the paper's W = kernel^T.
    W1 = to_numpy(layer.attention_kernel).T.astype("float64")
    W2 = to_numpy(layer.input_kernel).T.astype("float64")
    b = to_numpy(layer.bias).astype("float64")
    np.testing.assert_allclose(out, reference(s, h, W1, W2, b, padding), atol=1e-5, rtol=1e-5)
    assert np.all(out[1, 2:] == 0)


def test_gate_is_between_h_and_s():
    s, h = random_pair()
    out = to_numpy(built_layer([s, h])([s, h]))
    lo, hi = np.minimum(s, h), np.maximum(s, h)
    assert np.all(out >= lo - 1e-6) and np.all(out <= hi + 1e-6)


def test_standard_layer_checks():
    s, h = random_pair(batch=2, n=6)
    padding = np.array([[1] * 6, [1] * 4 + [0] * 2], dtype=bool)
    run_layer_test(
        lambda: FusionGate(kernel_regularizer="l2"),
        [s, h],
        mask=padding,
        expected_output_shape=(2, 6, D),
        expected_num_trainable_weights=3,
    )


def test_standard_layer_checks_without_mask():
    run_layer_test(FusionGate, random_pair(batch=3, n=4), expected_output_shape=(3, 4, D))


@pytest.mark.parametrize(
    "dtype_policy", ["mixed_float16", "mixed_bfloat16"], indirect=True
)
def test_mixed_precision(dtype_policy):
    s, h = random_pair()
    keras.mixed_precision.set_global_policy("float32")
    ref = built_layer([s, h])
    ref_out = to_numpy(ref([s, h]))
    keras.mixed_precision.set_global_policy(dtype_policy)
    layer = FusionGate()
    layer([s, h])
    layer.set_weights(ref.get_weights())
    out = to_numpy(layer([s, h])).astype("float32")
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, ref_out, atol=5e-2, rtol=5e-2)
    input_grads, weight_grads = gradients(layer, [s, h])
    for g in input_grads + weight_grads:
        assert g is not None and np.all(np.isfinite(g))
