"""MultiRegionEmbedding against NumPy: parallel 'same' convolutions of each
region size over the unpadded sequence, concatenated (EPN section 2.2)."""

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

from keras_posattn.layers import MultiRegionEmbedding

WIDTH = 5


def test_matches_numpy_reference_on_each_sequence():
    x, mask = padded_batch([7, 4, 1], n=7, width=WIDTH)
    layer = built(MultiRegionEmbedding(), x)
    out = to_numpy(layer(x, mask=mask))
    assert out.shape == (3, 7, 100)
    for b, length in enumerate(mask.sum(axis=1)):
        expected = np.concatenate([numpy_same_conv(x[b, :length].astype("float64"),
                                                   *conv_weights(conv)) for conv in layer.convs], -1)
        np.testing.assert_allclose(out[b, :length], expected, atol=1e-4, rtol=1e-4)
        assert np.all(out[b, length:] == 0)


def test_padding_invariance_layer_checks_and_mask():
    real = np.random.default_rng(5).normal(size=(1, 6, WIDTH)).astype("float32")
    check_padding_invariance(built(MultiRegionEmbedding((3, 5), (4, 2), activation="relu"), real),
                             real, atol=1e-5)
    x, mask = padded_batch([5, 2], n=5, width=WIDTH)
    run_layer_test(lambda: MultiRegionEmbedding((3, 4), (3, 2)), x, mask=mask,
                   expected_output_shape=(2, 5, 5), expected_num_trainable_weights=4)
    check_mask_passes_through(MultiRegionEmbedding(), WIDTH)
    with pytest.raises(ValueError, match="same"):
        MultiRegionEmbedding((3, 4), (30,))


@pytest.mark.parametrize("dtype_policy", ["float32", "mixed_float16", "mixed_bfloat16"],
                         indirect=True)
def test_all_padding_rows_and_mixed_precision(dtype_policy):
    x, mask = padded_batch([5, 0], n=5, width=WIDTH, garbage=3.0)
    check_all_padding_sequence(lambda: MultiRegionEmbedding((3, 4), (3, 2)), x, mask, dtype_policy)
