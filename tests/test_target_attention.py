"""TargetAttention against a NumPy implementation of HCAN eq. (5).

Target(E) = MultiHead(T, K, V), K = ELU(Conv1D(E) + b), V = E (released code)
or ELU(Conv1D(E) + b) (the text); one learned query T. The reference runs on
each sequence's real tokens alone.
"""

import doctest

import keras
import numpy as np
import pytest
from layer_checks import run_layer_test
from layer_checks import to_numpy
from sequence_checks import built
from sequence_checks import check_all_padding_sequence
from sequence_checks import check_dropout_only_in_training
from sequence_checks import with_padding
from test_conv_multi_head_self_attention import conv_weights
from test_conv_multi_head_self_attention import np_multi_head
from test_conv_multi_head_self_attention import padded_batch
from test_masked_conv_and_pooling import numpy_same_conv
from test_masked_self_attention import np_elu

from keras_posattn.layers import TargetAttention
from keras_posattn.layers import target_attention

D_IN, UNITS, HEADS = 6, 8, 2


def reference(layer, e):
    """Eq. (5) for one unpadded sequence e (n, d_in): output (d_v,), weights (h, n)."""
    e = e.astype("float64")
    keys = np_elu(numpy_same_conv(e, *conv_weights(layer._key_conv)))
    values = e
    if layer.project_values:
        values = np_elu(numpy_same_conv(e, *conv_weights(layer._value_conv)))
    target = to_numpy(layer.target).astype("float64")  # (1, units)
    out, weights = np_multi_head(target, keys, values, layer.num_heads)
    return out[0], weights[:, 0]


def built_layer(x, seed=3, **kwargs):
    kwargs.setdefault("dropout", 0.0)
    return built(TargetAttention(units=UNITS, num_heads=HEADS, **kwargs), x, seed)


@pytest.mark.parametrize("project_values", [False, True])
def test_matches_numpy_reference_on_each_sequence(project_values):
    x, mask = padded_batch([6, 3, 1], n=6)
    layer = built_layer(x, project_values=project_values)
    out, weights = (to_numpy(t) for t in layer(x, mask=mask, return_attention_scores=True))
    assert out.shape == (3, UNITS if project_values else D_IN)
    assert weights.shape == (3, HEADS, 6)
    for b, length in enumerate(mask.sum(axis=1)):
        ref_out, ref_weights = reference(layer, x[b, :length])
        np.testing.assert_allclose(out[b], ref_out, atol=1e-5, rtol=1e-5)
        np.testing.assert_allclose(weights[b, :, :length], ref_weights, atol=1e-6)
        assert np.all(weights[b, :, length:] == 0)  # padding gets no weight
        np.testing.assert_allclose(weights[b].sum(axis=-1), 1.0, atol=1e-6)


@pytest.mark.parametrize("project_values", [False, True])
def test_padding_invariance(project_values):
    length = 4
    real, _ = padded_batch([length], n=length, seed=1)
    layer = built_layer(real, project_values=project_values)
    unpadded = [to_numpy(t)[0] for t in layer(real, return_attention_scores=True)]
    for extra in (1, 40):
        x, mask = with_padding(real, extra, garbage=1e4)
        out, weights = (to_numpy(t)[0] for t in layer(x, mask=mask, return_attention_scores=True))
        np.testing.assert_allclose(out, unpadded[0], atol=1e-5)
        np.testing.assert_allclose(weights[:, :length], unpadded[1], atol=1e-6)
        assert np.all(weights[:, length:] == 0)


@pytest.mark.parametrize(
    "dtype_policy", ["float32", "mixed_float16", "mixed_bfloat16"], indirect=True
)
@pytest.mark.parametrize("project_values", [False, True])
def test_all_padding_sequence_gives_zeros_and_finite_gradients(dtype_policy, project_values):
    x, mask = padded_batch([5, 0, 2], n=5, seed=2, garbage=1.0)
    x[1] = 1e3  # an empty text's padding may hold anything
    check_all_padding_sequence(
        lambda: TargetAttention(UNITS, HEADS, project_values=project_values, dropout=0.0),
        x,
        mask,
        dtype_policy,
        call_kwargs={"return_attention_scores": True},
    )


@pytest.mark.parametrize("project_values", [False, True])
def test_standard_layer_checks(project_values):
    x, mask = padded_batch([5, 2], n=5, seed=4, garbage=1.0)
    run_layer_test(
        lambda: TargetAttention(
            units=UNITS, num_heads=HEADS, project_values=project_values, kernel_regularizer="l2"
        ),
        x,
        mask=mask,
        call_kwargs={"return_attention_scores": True},
        expected_output_shape=[(2, UNITS if project_values else D_IN), (2, HEADS, 5)],
        # T, the key convolution, and the value convolution if any
        expected_num_trainable_weights=5 if project_values else 3,
    )


def test_standard_layer_checks_without_mask():
    x, _ = padded_batch([3, 3], n=3, seed=5)
    run_layer_test(
        lambda: TargetAttention(units=4, num_heads=2, dropout=0.2),
        x,
        expected_output_shape=(2, D_IN),
    )


def test_in_a_functional_model_the_mask_stops_here():
    ids = keras.Input(shape=(None,), dtype="int32")
    h = keras.layers.Embedding(10, D_IN, mask_zero=True)(ids)
    pooled = TargetAttention(UNITS, HEADS)(h)
    assert getattr(pooled, "_keras_mask", None) is None
    model = keras.Model(ids, pooled)
    short, long = np.array([[3, 4, 5]]), np.array([[3, 4, 5] + [0] * 20])
    np.testing.assert_allclose(to_numpy(model(short)), to_numpy(model(long)), atol=1e-6)


def test_dropout_only_in_training():
    x, mask = padded_batch([5, 5], n=5, seed=8)
    check_dropout_only_in_training(built_layer(x, dropout=0.5), x, mask)


def test_errors_and_docstring_example():
    with pytest.raises(ValueError, match="num_heads"):
        TargetAttention(units=10, num_heads=4)
    with pytest.raises(ValueError, match="width 6 must be divisible by num_heads=4"):
        TargetAttention(units=8, num_heads=4)(np.zeros((1, 3, 6), "float32"))
    # Projected values may have any input width.
    assert TargetAttention(8, 4, project_values=True)(np.zeros((1, 3, 6), "float32")).shape == (
        1,
        8,
    )
    assert doctest.testmod(target_attention).failed == 0
