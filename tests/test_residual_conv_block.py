"""ResidualConvBlock against NumPy: x + conv(relu(conv(relu(x)))) on each
unpadded sequence (EPN's and DPCNN's pre-activation block)."""

import numpy as np
import pytest
from layer_checks import run_layer_test
from layer_checks import to_numpy
from sequence_checks import built
from sequence_checks import check_all_padding_sequence
from sequence_checks import check_mask_passes_through
from sequence_checks import check_padding_invariance
from sequence_checks import padded_batch
from test_conv_multi_head_self_attention import conv_weights
from test_masked_conv_and_pooling import numpy_same_conv

from keras_posattn.layers import ResidualConvBlock

WIDTH = 6


def reference(layer, x):
    x = x.astype("float64")
    h = x
    for conv in layer.convs:
        h = numpy_same_conv(np.maximum(h, 0.0), *conv_weights(conv))
    return x + h


@pytest.mark.parametrize("num_convs, kernel_size", [(2, 3), (1, 3), (2, 2)])
def test_matches_numpy_reference_on_each_sequence(num_convs, kernel_size):
    x, mask = padded_batch([6, 3, 1], n=6, width=WIDTH)
    layer = built(ResidualConvBlock(WIDTH, kernel_size, num_convs=num_convs), x)
    out = to_numpy(layer(x, mask=mask))
    for b, length in enumerate(mask.sum(axis=1)):
        np.testing.assert_allclose(out[b, :length], reference(layer, x[b, :length]),
                                   atol=1e-4, rtol=1e-4)
        assert np.all(out[b, length:] == 0)


def test_padding_invariance_layer_checks_and_mask():
    real = np.random.default_rng(4).normal(size=(1, 5, WIDTH)).astype("float32")
    check_padding_invariance(built(ResidualConvBlock(WIDTH), real), real, atol=1e-5)
    x, mask = padded_batch([5, 2], n=5, width=WIDTH)
    run_layer_test(lambda: ResidualConvBlock(WIDTH), x, mask=mask,
                   expected_output_shape=(2, 5, WIDTH), expected_num_trainable_weights=4)
    check_mask_passes_through(ResidualConvBlock(WIDTH), WIDTH)
    with pytest.raises(ValueError, match="channels"):
        ResidualConvBlock(WIDTH + 1)(x)


@pytest.mark.parametrize("dtype_policy", ["float32", "mixed_float16", "mixed_bfloat16"],
                         indirect=True)
def test_all_padding_rows_and_mixed_precision(dtype_policy):
    x, mask = padded_batch([5, 0], n=5, width=WIDTH, garbage=3.0)
    check_all_padding_sequence(lambda: ResidualConvBlock(WIDTH), x, mask, dtype_policy)
