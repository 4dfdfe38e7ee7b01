"""MultiHeadSelfAttention against NumPy (EPN eqs. 4-6, Vaswani et al.), on each
sequence's real tokens alone."""

import numpy as np
import pytest
from layer_checks import run_layer_test
from layer_checks import to_numpy
from sequence_checks import built
from sequence_checks import check_all_padding_sequence
from sequence_checks import check_dropout_only_in_training
from sequence_checks import check_mask_passes_through
from sequence_checks import check_padding_invariance
from sequence_checks import padded_batch
from test_conv_multi_head_self_attention import np_multi_head

from keras_posattn.layers import MultiHeadSelfAttention

WIDTH, HEADS = 8, 2


def dense(layer, x):
    return x @ to_numpy(layer.kernel).astype("float64") + to_numpy(layer.bias).astype("float64")


def reference(layer, x):
    x = x.astype("float64")
    out, weights = np_multi_head(dense(layer.query, x), dense(layer.key, x),
                                 dense(layer.value, x), layer.num_heads)
    return dense(layer.output_dense, out), weights


def test_matches_numpy_reference_on_each_sequence():
    x, mask = padded_batch([6, 3, 1], n=6, width=WIDTH)
    layer = built(MultiHeadSelfAttention(HEADS), x)
    out, weights = (to_numpy(t) for t in layer(x, mask=mask, return_attention_scores=True))
    assert weights.shape == (3, HEADS, 6, 6)
    for b, length in enumerate(mask.sum(axis=1)):
        ref_out, ref_weights = reference(layer, x[b, :length])
        np.testing.assert_allclose(out[b, :length], ref_out, atol=1e-4, rtol=1e-4)
        np.testing.assert_allclose(weights[b, :, :length, :length], ref_weights, atol=1e-5)
        assert np.all(weights[b, :, :, length:] == 0) and np.all(out[b, length:] == 0)


def test_padding_invariance_and_mask():
    real = np.random.default_rng(2).normal(size=(1, 5, WIDTH)).astype("float32")
    layer = built(MultiHeadSelfAttention(HEADS, units=4), real)
    check_padding_invariance(layer, real, atol=1e-5)
    check_mask_passes_through(MultiHeadSelfAttention(HEADS), WIDTH)


def test_layer_checks_and_dropout():
    x, mask = padded_batch([5, 2], n=5, width=WIDTH)
    run_layer_test(lambda: MultiHeadSelfAttention(HEADS, dropout=0.1), x, mask=mask,
                   call_kwargs={"return_attention_scores": True},
                   expected_output_shape=[(2, 5, WIDTH), (2, HEADS, 5, 5)],
                   expected_num_trainable_weights=8)
    check_dropout_only_in_training(built(MultiHeadSelfAttention(HEADS, dropout=0.5), x), x, mask)
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadSelfAttention(3)(x)


@pytest.mark.parametrize("dtype_policy", ["float32", "mixed_float16", "mixed_bfloat16"],
                         indirect=True)
def test_all_padding_rows_and_mixed_precision(dtype_policy):
    x, mask = padded_batch([5, 0], n=5, width=WIDTH, garbage=3.0)
    check_all_padding_sequence(lambda: MultiHeadSelfAttention(HEADS), x, mask, dtype_policy,
                               call_kwargs={"return_attention_scores": True})
