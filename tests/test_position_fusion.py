"""PositionFusion against a NumPy implementation of MPSAN eqs. (15)-(16).

a = softmax(W_P^T w + b_P), applied per feature and per position over the k
sources (the paper's a in R^{k d_h x n}, rows grouped source by source as in
[s_1; ...; s_{k-1}; w]); o = sum_k a_k * source_k.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf
from layer_checks import gradients
from layer_checks import randomize_weights
from layer_checks import run_layer_test
from layer_checks import to_numpy

from keras_posattn.layers import PositionFusion

D = 8
K = 3


def reference(sources, W, bias, padding, position_bias):
    """Eqs. (15)-(16) column by column (one column = one position).

    W: (d_e, k*d) = W_P. bias: (max_length, k*d) rows = the columns of the
    paper's b_P (``position_bias``), or one (k*d,) vector shared by all.
    """
    sources = [s.astype("float64") for s in sources]
    w = sources[-1]
    k = len(sources)
    B, n, d = w.shape
    out = np.zeros((B, n, d))
    weights = np.zeros((B, n, k, d))
    for b in range(B):
        for t in range(n):
            z = W.T @ w[b, t] + (bias[t] if position_bias else bias)  # (k*d,)
            z = z.reshape(k, d)  # row block j belongs to source j
            e = np.exp(z - z.max(axis=0))
            a = e / e.sum(axis=0)  # softmax over the k sources, per feature
            weights[b, t] = a
            if padding is not None and not padding[b, t]:
                continue
            out[b, t] = sum(a[j] * sources[j][b, t] for j in range(k))
    return out, weights


def random_sources(batch=2, n=5, d=D, k=K, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(batch, n, d)).astype("float32") for _ in range(k)]


def built_layer(sources, seed=1, **kwargs):
    layer = PositionFusion(**kwargs)
    layer(sources)
    randomize_weights(layer, seed=seed, scale=0.8)
    return layer


@pytest.mark.parametrize("bias", ["position", "shared"])
def test_matches_numpy_reference(bias):
    sources = random_sources(batch=2, n=5)
    padding = np.array([[1] * 5, [1] * 3 + [0] * 2], dtype=bool)
    layer = built_layer(sources, bias=bias, max_length=9)
    out, weights = layer(sources, mask=[padding] * K, return_weights=True)
    W = to_numpy(layer.kernel).astype("float64")
    b = to_numpy(layer.bias_weight).astype("float64")
    assert W.shape == (D, K * D)
    assert b.shape == ((9, K * D) if bias == "position" else (K * D,))
    ref_out, ref_weights = reference(sources, W, b, padding, bias == "position")
    np.testing.assert_allclose(to_numpy(out), ref_out, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(to_numpy(weights), ref_weights, atol=1e-5, rtol=1e-5)
    # Softmax over the sources: weights sum to one per feature and position.
    np.testing.assert_allclose(to_numpy(weights).sum(axis=2), 1.0, atol=1e-5)


@pytest.mark.parametrize("bias", ["position", "shared"])
def test_standard_layer_checks(bias):
    sources = random_sources(batch=2, n=6)
    padding = np.array([[1] * 6, [1] * 2 + [0] * 4], dtype=bool)
    run_layer_test(
        lambda: PositionFusion(bias=bias, max_length=8, kernel_regularizer="l2"),
        sources,
        mask=padding,
        call_kwargs={"return_weights": True},
        expected_output_shape=[(2, 6, D), (2, 6, K, D)],
        expected_num_trainable_weights=2,
    )


def test_standard_layer_checks_without_mask():
    run_layer_test(
        lambda: PositionFusion(bias="shared"),
        random_sources(batch=2, n=4, k=5),
        expected_output_shape=(2, 4, D),
    )


def test_position_bias_changes_with_position_and_shared_does_not():
    # The same token and the same sources at every position.
    rng = np.random.default_rng(3)
    n = 6
    sources = [
        np.tile(rng.normal(size=(1, 1, D)), (1, n, 1)).astype("float32") for _ in range(K)
    ]
    shared = built_layer(sources, bias="shared")
    out = to_numpy(shared(sources))
    np.testing.assert_allclose(out, np.broadcast_to(out[:, :1], out.shape), atol=1e-6)

    position = built_layer(sources, bias="position", max_length=10)
    out = to_numpy(position(sources))
    for t in range(1, n):
        assert not np.allclose(out[0, 0], out[0, t]), t


def test_position_bias_is_sliced_to_the_batch_length():
    long_sources = random_sources(batch=1, n=7)
    layer = built_layer(long_sources, bias="position", max_length=7)
    full = to_numpy(layer(long_sources))
    short = to_numpy(layer([s[:, :4] for s in long_sources]))
    # Positions 0-3 use b_P's first 4 columns whatever the batch's length.
    np.testing.assert_allclose(short, full[:, :4], atol=1e-6)
    # One position: only the first column.
    one = to_numpy(layer([s[:, :1] for s in long_sources]))
    np.testing.assert_allclose(one, full[:, :1], atol=1e-6)


def test_longer_than_max_length_is_an_error():
    layer = PositionFusion(bias="position", max_length=4)
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError)):
        layer(random_sources(batch=1, n=6))


def test_padding_positions_are_zero():
    sources = random_sources(batch=2, n=6)
    padding = np.array([[1] * 6, [1] * 2 + [0] * 4], dtype=bool)
    layer = built_layer(sources, bias="position", max_length=6)
    out = to_numpy(layer(sources, mask=[padding] * K))
    assert np.all(out[1, 2:] == 0)
    assert np.all(out[0] != 0)


def test_mask_propagates_from_embedding():
    ids = np.array([[4, 5, 6, 0, 0]], dtype="int32")
    inputs = keras.Input(shape=(None,), dtype="int32")
    w = keras.layers.Embedding(10, D, mask_zero=True)(inputs)
    s1 = keras.layers.Dense(D)(w)
    s2 = keras.layers.Dense(D)(w)
    fusion = PositionFusion(bias="position", max_length=5)
    out_tensor = fusion([s1, s2, w])
    model = keras.Model(inputs, out_tensor)
    randomize_weights(model, seed=0)
    out = to_numpy(model(ids))
    assert np.all(out[0, 3:] == 0) and np.all(out[0, :3] != 0)


def test_errors():
    with pytest.raises(ValueError, match="max_length"):
        PositionFusion(bias="position")
    with pytest.raises(ValueError, match="max_length"):
        PositionFusion()  # the paper's bias is the default
    with pytest.raises(ValueError, match="bias"):
        PositionFusion(bias="per_token", max_length=4)
    PositionFusion(bias="shared")  # no max_length needed
    layer = PositionFusion(bias="shared")
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="last dimension"):
        layer([rng.normal(size=(1, 3, 4)), rng.normal(size=(1, 3, 5))])


@pytest.mark.parametrize(
    "dtype_policy", ["mixed_float16", "mixed_bfloat16"], indirect=True
)
@pytest.mark.parametrize("bias", ["position", "shared"])
def test_mixed_precision(dtype_policy, bias):
    sources = random_sources(batch=2, n=5)
    padding = np.array([[1] * 5, [0] * 5], dtype=bool)
    keras.mixed_precision.set_global_policy("float32")
    ref = built_layer(sources, bias=bias, max_length=5)
    ref_out = to_numpy(ref(sources, mask=[padding] * K))
    keras.mixed_precision.set_global_policy(dtype_policy)
    layer = PositionFusion(bias=bias, max_length=5)
    layer(sources)
    layer.set_weights(ref.get_weights())
    out, weights = layer(sources, mask=[padding] * K, return_weights=True)
    assert out.dtype == keras.mixed_precision.global_policy().compute_dtype
    assert weights.dtype == "float32"
    out = to_numpy(out).astype("float32")
    assert np.all(np.isfinite(out))
    assert np.all(out[1] == 0)
    np.testing.assert_allclose(out, ref_out, atol=5e-2, rtol=5e-2)
    input_grads, weight_grads = gradients(layer, sources, mask=padding)
    for g in input_grads + weight_grads:
        assert g is not None and np.all(np.isfinite(g))


def test_input_dropout_keeps_the_sources_undropped():
    """The released code drops w where it enters W_P only: in training the
    outputs are still the returned weights times the undropped sources."""
    rng = np.random.default_rng(6)
    sources = [rng.normal(size=(2, 5, 8)).astype("float32") for _ in range(3)]
    layer = PositionFusion(bias="shared", input_dropout=0.5)
    layer(sources)
    out, a = layer(sources, return_weights=True, training=True)
    expected = np.einsum("bnkd,bnkd->bnd", to_numpy(a), np.stack(sources, axis=2))
    np.testing.assert_allclose(to_numpy(out), expected, atol=1e-5)
    assert not np.allclose(to_numpy(out), to_numpy(layer(sources, training=False)))
