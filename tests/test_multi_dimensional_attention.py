"""MultiDimensionalAttention against DiSAN's source2token attention in NumPy.

p = softmax over t, per feature, of W_2 elu(W_1 x_t + b_1) + b_2 (padding
blocked); out = sum_t p_t * x_t.
"""

import keras
import numpy as np
import pytest
from layer_checks import gradients
from layer_checks import randomize_weights
from layer_checks import run_layer_test
from layer_checks import to_numpy

from keras_posattn.layers import MultiDimensionalAttention

D = 8


def np_elu(x):
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0)))


def reference(x, W1, b1, W2, b2, padding=None, act=np_elu):
    """W1, W2 act on column vectors (the paper's form)."""
    x = x.astype("float64")
    B, n, d = x.shape
    out = np.zeros((B, d))
    probs = np.zeros((B, n, d))
    for i in range(B):
        steps = [t for t in range(n) if padding is None or padding[i, t]]
        if not steps:
            continue  # empty sequence: zeros
        logits = np.stack([W2 @ act(W1 @ x[i, t] + b1) + b2 for t in steps])  # (T, d)
        e = np.exp(logits - logits.max(axis=0))
        p = e / e.sum(axis=0)  # per feature, over time
        for j, t in enumerate(steps):
            probs[i, t] = p[j]
            out[i] += p[j] * x[i, t]
    return out, probs


def paper_weights(layer):
    # Keras kernels act on row vectors: the paper's W = kernel^T.
    return [
        to_numpy(layer.kernel_1).T.astype("float64"),
        to_numpy(layer.bias_1).astype("float64"),
        to_numpy(layer.kernel_2).T.astype("float64"),
        to_numpy(layer.bias_2).astype("float64"),
    ]


def random_inputs(batch=3, n=6, d=D, seed=0):
    return np.random.default_rng(seed).normal(size=(batch, n, d)).astype("float32")


def built_layer(x, seed=1, **kwargs):
    layer = MultiDimensionalAttention(**kwargs)
    layer(x)
    randomize_weights(layer, seed=seed, scale=0.8)
    return layer


@pytest.mark.parametrize("activation", ["elu", "relu"])
def test_matches_numpy_reference(activation):
    x = random_inputs()
    padding = np.array([[1] * 6, [1] * 3 + [0] * 3, [1] + [0] * 5], dtype=bool)
    layer = built_layer(x, activation=activation)
    out, weights = layer(x, mask=padding, return_attention_scores=True)
    act = np_elu if activation == "elu" else (lambda v: np.maximum(v, 0))
    ref_out, ref_p = reference(x, *paper_weights(layer), padding=padding, act=act)
    np.testing.assert_allclose(to_numpy(out), ref_out, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(to_numpy(weights), ref_p, atol=1e-5, rtol=1e-5)
    # A one-token sequence pools to that token.
    np.testing.assert_allclose(to_numpy(out)[2], x[2, 0], atol=1e-6)


def test_standard_layer_checks():
    x = random_inputs(batch=2, n=5)
    padding = np.array([[1] * 5, [1] * 2 + [0] * 3], dtype=bool)
    run_layer_test(
        lambda: MultiDimensionalAttention(kernel_regularizer="l2"),
        x,
        mask=padding,
        call_kwargs={"return_attention_scores": True},
        expected_output_shape=[(2, D), (2, 5, D)],
        expected_num_trainable_weights=4,
    )


def test_standard_layer_checks_without_mask():
    run_layer_test(
        lambda: MultiDimensionalAttention(activation="relu"),
        random_inputs(batch=2, n=4),
        expected_output_shape=(2, D),
    )


def test_padding_invariance():
    rng = np.random.default_rng(2)
    length = 5
    x = rng.normal(size=(1, length, D)).astype("float32")
    layer = built_layer(x)
    results = []
    for extra in (5, 50):
        padded = np.concatenate([x, rng.normal(size=(1, extra, D)).astype("float32") * 10], 1)
        padding = np.arange(length + extra)[None] < length
        out, weights = layer(padded, mask=padding, return_attention_scores=True)
        weights = to_numpy(weights)
        assert np.all(weights[0, length:] == 0)  # padding: exactly zero weight
        results.append((to_numpy(out), weights[0, :length]))
    np.testing.assert_allclose(results[0][0], results[1][0], atol=1e-6)
    np.testing.assert_allclose(results[0][1], results[1][1], atol=1e-6)
    np.testing.assert_allclose(results[0][0], to_numpy(layer(x)), atol=1e-6)


def test_mask_from_token_ids():
    inputs = keras.Input(shape=(None,), dtype="int32")
    pooled = MultiDimensionalAttention()(keras.layers.Embedding(12, D, mask_zero=True)(inputs))
    model = keras.Model(inputs, pooled)
    randomize_weights(model, seed=0)
    ids = np.array([[3, 4, 5]], dtype="int32")
    a = to_numpy(model(ids))
    b = to_numpy(model(np.pad(ids, [(0, 0), (0, 20)])))
    np.testing.assert_allclose(a, b, atol=1e-6)


@pytest.mark.parametrize(
    "dtype_policy", ["float32", "mixed_float16", "mixed_bfloat16"], indirect=True
)
def test_all_padding_pools_to_zero_with_finite_gradients(dtype_policy):
    x = random_inputs(batch=2, n=4)
    padding = np.array([[1, 1, 1, 0], [0, 0, 0, 0]], dtype=bool)
    keras.mixed_precision.set_global_policy("float32")
    ref = built_layer(x)
    ref_out = to_numpy(ref(x, mask=padding))
    keras.mixed_precision.set_global_policy(dtype_policy)
    layer = MultiDimensionalAttention()
    layer(x)
    layer.set_weights(ref.get_weights())
    out, weights = layer(x, mask=padding, return_attention_scores=True)
    assert weights.dtype == "float32"
    out = to_numpy(out).astype("float32")
    assert np.all(np.isfinite(out))
    assert np.all(out[1] == 0) and np.all(to_numpy(weights)[1] == 0)
    tol = 1e-5 if dtype_policy == "float32" else 5e-2
    np.testing.assert_allclose(out, ref_out, atol=tol, rtol=tol)
    input_grads, weight_grads = gradients(layer, x, mask=padding)
    for g in input_grads + weight_grads:
        assert g is not None and np.all(np.isfinite(g))
    assert np.all(input_grads[0][1] == 0)  # nothing depends on the empty sequence


def test_input_dropout_keeps_the_pooled_values_undropped():
    """The released code drops the inputs of W_1 and W_2 only: in training the
    output is still the returned weights times the undropped inputs."""
    x = np.random.default_rng(8).normal(size=(2, 6, 8)).astype("float32")
    layer = MultiDimensionalAttention(input_dropout=0.5)
    layer(x)
    out, p = layer(x, return_attention_scores=True, training=True)
    np.testing.assert_allclose(to_numpy(out), (to_numpy(p) * x).sum(axis=1), atol=1e-5)
    assert not np.allclose(to_numpy(out), to_numpy(layer(x, training=False)))
