"""MaskedMaxPooling1D against NumPy: right-padded windows, max over real
positions, the mask downsampled with the values."""

import numpy as np
import pytest
from layer_checks import run_layer_test
from layer_checks import to_numpy
from sequence_checks import check_all_padding_sequence
from sequence_checks import check_mask_passes_through
from sequence_checks import padded_batch
from sequence_checks import with_padding

from keras_posattn.layers import MaskedMaxPooling1D


def reference(x, length, pool_size, strides):
    """Pool one unpadded sequence x (length, d): ceil(length / strides) windows."""
    out = []
    for start in range(0, length, strides):
        out.append(x[start:min(start + pool_size, length)].max(axis=0))
    return np.stack(out)


@pytest.mark.parametrize("pool_size, strides", [(2, 2), (3, 2), (3, 3), (1, 1)])
def test_matches_numpy_and_downsamples_the_mask(pool_size, strides):
    x, mask = padded_batch([7, 4, 1, 2], n=7, width=3)
    layer = MaskedMaxPooling1D(pool_size, strides)
    out = to_numpy(layer(x, mask=mask))
    new_mask = to_numpy(layer.compute_mask(x, mask))
    assert out.shape == (4, -(-7 // strides), 3)
    for b, length in enumerate(mask.sum(axis=1)):
        expected = reference(x[b], length, pool_size, strides)
        np.testing.assert_allclose(out[b, :len(expected)], expected, atol=0)
        assert new_mask[b].tolist() == [i < len(expected) for i in range(out.shape[1])]
        assert np.all(out[b, len(expected):] == 0)


@pytest.mark.parametrize("pool_size, strides", [(2, 2), (3, 2)])
def test_windows_do_not_move_with_the_padding(pool_size, strides):
    real = np.random.default_rng(1).normal(size=(1, 5, 4)).astype("float32")
    layer = MaskedMaxPooling1D(pool_size, strides)
    unpadded = to_numpy(layer(real))
    kept = unpadded.shape[1]
    for extra in (1, 2, 3, 40):
        x, mask = with_padding(real, extra, seed=extra)
        out = to_numpy(layer(x, mask=mask))
        np.testing.assert_allclose(out[:, :kept], unpadded, atol=0)
        assert np.all(out[:, kept:] == 0)


def test_layer_checks_and_mask_in_a_functional_model():
    x, mask = padded_batch([6, 3], n=6, width=4)
    run_layer_test(lambda: MaskedMaxPooling1D(2), x, mask=mask, expected_output_shape=(2, 3, 4),
                   expected_num_trainable_weights=0, run_training=False)
    check_mask_passes_through(MaskedMaxPooling1D(2), 4)
    with pytest.raises(ValueError, match="skip positions"):
        MaskedMaxPooling1D(2, strides=3)


@pytest.mark.parametrize("dtype_policy", ["float32", "mixed_float16", "mixed_bfloat16"],
                         indirect=True)
def test_all_padding_rows_and_mixed_precision(dtype_policy):
    x, mask = padded_batch([5, 0], n=5, width=3, garbage=3.0)
    check_all_padding_sequence(lambda: MaskedMaxPooling1D(2), x, mask, dtype_policy)
