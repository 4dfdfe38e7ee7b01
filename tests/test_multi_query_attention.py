"""MultiQueryAttention against NumPy (CSPAN eqs. 10-13), its parameter count
as a formula in m and d, padding and empty texts."""

import numpy as np
import pytest
from layer_checks import run_layer_test
from layer_checks import to_numpy
from sequence_checks import built
from sequence_checks import padded_batch
from sequence_checks import with_padding

from keras_posattn.layers import MultiQueryAttention

WIDTH = 6


def np_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def reference(layer, f):
    """Eqs. 10-13 for one unpadded sequence f (n, d)."""
    w = {v.name: to_numpy(v).astype("float64") for v in layer.weights}
    u = np.tanh(f @ w["hidden_kernel"] + w["hidden_bias"])   # (n, d)
    alpha = np_softmax(w["queries"] @ u.T)                   # (m, n), over tokens
    pooled = alpha @ f                                       # (m, d)
    joined = pooled.reshape(-1) if layer.fusion == "concat" else pooled.mean(axis=0)
    return joined @ w["fusion_kernel"] + w.get("fusion_bias", 0.0), alpha


@pytest.mark.parametrize("fusion, use_bias", [("concat", False), ("mean", False), ("concat", True)])
def test_matches_numpy_reference_on_each_sequence(fusion, use_bias):
    x, mask = padded_batch([6, 3, 1], n=6, width=WIDTH)
    layer = built(MultiQueryAttention(4, fusion=fusion, use_bias=use_bias), x)
    out, alpha = (to_numpy(t) for t in layer(x, mask=mask, return_attention_scores=True))
    assert out.shape == (3, WIDTH) and alpha.shape == (3, 4, 6)
    for b, length in enumerate(mask.sum(axis=1)):
        ref_out, ref_alpha = reference(layer, x[b, :length].astype("float64"))
        np.testing.assert_allclose(out[b], ref_out, atol=1e-4, rtol=1e-4)
        np.testing.assert_allclose(alpha[b, :, :length], ref_alpha, atol=1e-5)
        assert np.all(alpha[b, :, length:] == 0)


@pytest.mark.parametrize("m", [1, 16, 128])
@pytest.mark.parametrize("d", [8, 300])
def test_parameter_count_in_m_and_d(m, d):
    """The queries and the shared MLP are O(md + d^2); the paper's concat
    fusion adds W_f of md x d (O(md^2)); the mean fusion keeps it d x d."""
    x = np.zeros((1, 3, d), "float32")
    concat, mean = MultiQueryAttention(m), MultiQueryAttention(m, fusion="mean")
    concat(x), mean(x)
    attention = m * d + d * d + d                      # queries, W_h, b_h
    assert concat.count_params() == attention + m * d * d  # W_f (md x d), no bias (eq. 13)
    assert mean.count_params() == attention + d * d
    if m == 128 and d == 300:  # CSPAN big: what the mean fusion saves
        assert concat.count_params() - mean.count_params() == 127 * 300 * 300


def test_padding_invariance_and_empty_text():
    real = np.random.default_rng(6).normal(size=(1, 5, WIDTH)).astype("float32")
    layer = built(MultiQueryAttention(3), real)
    unpadded = to_numpy(layer(real))
    for extra in (1, 40):
        x, mask = with_padding(real, extra, seed=extra)
        np.testing.assert_allclose(to_numpy(layer(x, mask=mask)), unpadded, atol=1e-5)
    x, mask = padded_batch([0], n=4, width=WIDTH)
    out, alpha = layer(x, mask=mask, return_attention_scores=True)
    assert np.all(to_numpy(alpha) == 0) and np.all(to_numpy(out) == 0)


def test_layer_checks():
    x, mask = padded_batch([5, 2], n=5, width=WIDTH)
    run_layer_test(lambda: MultiQueryAttention(3), x, mask=mask,
                   call_kwargs={"return_attention_scores": True},
                   expected_output_shape=[(2, WIDTH), (2, 3, 5)],
                   expected_num_trainable_weights=4)
    with pytest.raises(ValueError, match="num_queries"):
        MultiQueryAttention(0)


@pytest.mark.parametrize("dtype_policy", ["mixed_float16", "mixed_bfloat16"], indirect=True)
def test_mixed_precision(dtype_policy):
    import keras

    x, mask = padded_batch([5, 0], n=5, width=WIDTH, garbage=3.0)
    keras.mixed_precision.set_global_policy("float32")
    reference_layer = built(MultiQueryAttention(3), x)
    expected = to_numpy(reference_layer(x, mask=mask))
    keras.mixed_precision.set_global_policy(dtype_policy)
    layer = MultiQueryAttention(3)
    layer(x)
    layer.set_weights(reference_layer.get_weights())
    out, alpha = layer(x, mask=mask, return_attention_scores=True)
    assert alpha.dtype == "float32"
    out = to_numpy(out).astype("float32")
    assert np.isfinite(out).all() and np.all(to_numpy(alpha)[1] == 0)
    np.testing.assert_allclose(out, expected, atol=5e-2, rtol=5e-2)
