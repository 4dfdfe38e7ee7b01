"""ConvMultiHeadSelfAttention against a NumPy implementation of HCAN eqs. (1)-(4).

Parallel(E) = MultiHead(Q_a, K_a, V_a) * MultiHead(Q_b, K_b, V_b), then
LayerNorm; Q, K, V_a = ELU(Conv1D(E) + b), V_b = tanh(Conv1D(E) + b). The
reference runs on each sequence's real tokens alone, as the paper trains
(one document per step, no padding).
"""

import doctest

import numpy as np
import pytest
from layer_checks import run_layer_test
from layer_checks import to_numpy
from sequence_checks import built
from sequence_checks import check_all_padding_sequence
from sequence_checks import check_dropout_only_in_training
from sequence_checks import check_mask_passes_through
from sequence_checks import check_padding_invariance
from sequence_checks import padded_batch as padded_sequences
from sequence_checks import with_padding
from test_masked_conv_and_pooling import numpy_same_conv
from test_masked_self_attention import np_elu

from keras_posattn.layers import ConvMultiHeadSelfAttention
from keras_posattn.layers import conv_multi_head_self_attention

D_IN, UNITS, HEADS = 6, 8, 2


def np_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def np_multi_head(q, k, v, num_heads):
    """Eq. (3): [head_1, ..., head_h], head_i = softmax(Q_i K_i^T / sqrt(d_i)) V_i.

    q (n_q, d), k (n_k, d), v (n_k, d_v). Returns outputs (n_q, d_v) and the
    weights (h, n_q, n_k).
    """
    dq, dv = q.shape[1] // num_heads, v.shape[1] // num_heads
    outs, weights = [], []
    for i in range(num_heads):
        qi, ki = q[:, i * dq:(i + 1) * dq], k[:, i * dq:(i + 1) * dq]
        p = np_softmax(qi @ ki.T / np.sqrt(dq))
        outs.append(p @ v[:, i * dv:(i + 1) * dv])
        weights.append(p)
    return np.concatenate(outs, axis=1), np.stack(weights)


def np_layer_norm(x, gamma, beta, eps):
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def conv_weights(conv):
    return [to_numpy(w).astype("float64") for w in (conv.kernel, conv.bias)]


def reference(layer, e):
    """HCAN eq. (4) + LayerNorm for one unpadded sequence e (n, d_in)."""
    e = e.astype("float64")
    branches = []
    for query_conv, key_conv, value_conv in layer._branches:
        q = np_elu(numpy_same_conv(e, *conv_weights(query_conv)))
        k = np_elu(numpy_same_conv(e, *conv_weights(key_conv)))
        v = numpy_same_conv(e, *conv_weights(value_conv))
        v = np.tanh(v) if value_conv.name == "value_tanh" else np_elu(v)
        branches.append(np_multi_head(q, k, v, layer.num_heads))
    gamma, beta = (to_numpy(w).astype("float64") for w in layer._layer_norm.weights)
    if not layer.parallel:  # Table 2's "one self-attention"
        (out_a, p_a), = branches
        return np_layer_norm(out_a, gamma, beta, layer.layer_norm_epsilon), p_a
    (out_a, p_a), (out_b, p_b) = branches
    return np_layer_norm(out_a * out_b, gamma, beta, layer.layer_norm_epsilon), p_a, p_b


def built_layer(x, seed=3, **kwargs):
    kwargs.setdefault("dropout", 0.0)
    return built(ConvMultiHeadSelfAttention(units=UNITS, num_heads=HEADS, **kwargs), x, seed)


def padded_batch(lengths, n, seed=0, garbage=10.0):
    """Random (batch, n, D_IN) inputs whose padding holds large garbage."""
    return padded_sequences(lengths, n, D_IN, seed=seed, garbage=garbage)


@pytest.mark.parametrize("kernel_size", [3, 2])
def test_matches_numpy_reference_on_each_sequence(kernel_size):
    x, mask = padded_batch([6, 4, 1], n=6)
    layer = built_layer(x, kernel_size=kernel_size)
    out, p_a, p_b = (to_numpy(t) for t in layer(x, mask=mask, return_attention_scores=True))
    for b, length in enumerate(mask.sum(axis=1)):
        ref_out, ref_a, ref_b = reference(layer, x[b, :length])
        np.testing.assert_allclose(out[b, :length], ref_out, atol=2e-4, rtol=1e-4)
        np.testing.assert_allclose(p_a[b, :, :length, :length], ref_a, atol=1e-5)
        np.testing.assert_allclose(p_b[b, :, :length, :length], ref_b, atol=1e-5)


def test_one_attention_matches_numpy_reference():
    x, mask = padded_batch([6, 2], n=6, seed=9)
    layer = built_layer(x, parallel=False)
    assert len(layer._branches) == 1 and len(layer.trainable_weights) == 8
    out, p_a = (to_numpy(t) for t in layer(x, mask=mask, return_attention_scores=True))
    for b, length in enumerate(mask.sum(axis=1)):
        ref_out, ref_a = reference(layer, x[b, :length])
        np.testing.assert_allclose(out[b, :length], ref_out, atol=2e-4, rtol=1e-4)
        np.testing.assert_allclose(p_a[b, :, :length, :length], ref_a, atol=1e-5)
        assert np.all(out[b, length:] == 0)
    run_layer_test(
        lambda: ConvMultiHeadSelfAttention(units=UNITS, num_heads=HEADS, parallel=False),
        x, mask=mask, call_kwargs={"return_attention_scores": True},
        expected_output_shape=[(2, 6, UNITS), (2, HEADS, 6, 6)],
        expected_num_trainable_weights=8,
    )


def test_padding_invariance():
    length = 5
    real, _ = padded_batch([length], n=length, seed=1)
    layer = built_layer(real)
    check_padding_invariance(layer, real, atol=1e-5)
    unpadded = [to_numpy(t)[0] for t in layer(real, return_attention_scores=True)]
    for extra in (2, 40):
        x, mask = with_padding(real, extra)
        out, p_a, p_b = (to_numpy(t)[0] for t in layer(x, mask=mask, return_attention_scores=True))
        assert np.all(out[length:] == 0)  # padding outputs are zero
        for p in (p_a, p_b):
            assert np.all(p[:, :, length:] == 0)  # padding keys: no weight
            assert np.all(p[:, length:] == 0)  # padding queries: zero rows
        real_part = (out[:length], p_a[:, :length, :length], p_b[:, :length, :length])
        for got, expected in zip(real_part, unpadded):
            np.testing.assert_allclose(got, expected, atol=1e-5)


@pytest.mark.parametrize(
    "dtype_policy", ["float32", "mixed_float16", "mixed_bfloat16"], indirect=True
)
def test_all_padding_sequence_gives_zeros_and_finite_gradients(dtype_policy):
    x, mask = padded_batch([5, 0, 2], n=5, seed=2, garbage=1.0)
    out, _, _ = check_all_padding_sequence(
        lambda: ConvMultiHeadSelfAttention(units=UNITS, num_heads=HEADS, dropout=0.0),
        x,
        mask,
        dtype_policy,
        tol=1e-1,  # after a layer norm of a product of two attentions
        call_kwargs={"return_attention_scores": True},
    )
    assert np.all(out[~mask] == 0)


def test_standard_layer_checks_with_scores():
    x, mask = padded_batch([5, 3], n=5, seed=4, garbage=1.0)
    run_layer_test(
        lambda: ConvMultiHeadSelfAttention(
            units=UNITS, num_heads=HEADS, kernel_regularizer="l2", layer_norm_epsilon=1e-5
        ),
        x,
        mask=mask,
        call_kwargs={"return_attention_scores": True},
        expected_output_shape=[(2, 5, UNITS), (2, HEADS, 5, 5), (2, HEADS, 5, 5)],
        # six convolutions (kernel, bias) and the layer norm (gamma, beta)
        expected_num_trainable_weights=14,
    )


def test_standard_layer_checks_without_mask():
    x, _ = padded_batch([4, 4], n=4, seed=5)
    run_layer_test(
        lambda: ConvMultiHeadSelfAttention(units=UNITS, num_heads=4, kernel_size=1),
        x,
        expected_output_shape=(2, 4, UNITS),
    )


def test_the_two_attentions_have_their_own_query_and_key():
    x, mask = padded_batch([5], n=5, seed=6)
    layer = built_layer(x)
    kernels = [to_numpy(conv.kernel) for branch in layer._branches for conv in branch]
    assert len(kernels) == 6
    _, p_a, p_b = layer(x, mask=mask, return_attention_scores=True)
    assert not np.allclose(to_numpy(p_a), to_numpy(p_b))


def test_keeps_the_mask_and_dropout_only_in_training():
    check_mask_passes_through(ConvMultiHeadSelfAttention(UNITS, HEADS), D_IN)
    x, mask = padded_batch([5, 5], n=5, seed=8)
    check_dropout_only_in_training(built_layer(x, dropout=0.5), x, mask)


def test_errors_and_docstring_example():
    with pytest.raises(ValueError, match="num_heads"):
        ConvMultiHeadSelfAttention(units=10, num_heads=4)
    assert doctest.testmod(conv_multi_head_self_attention).failed == 0
