"""DPCNN and DPCNN+ (EPN's baselines): the shared model checks and parameter
counts at the paper's settings."""

import numpy as np
from layer_checks import to_numpy
from model_checks import run_model_test

from keras_posattn import zoo
from keras_posattn.layers import ResidualConvBlock
from keras_posattn.utils import count_parameters


def test_shared_model_checks():
    run_model_test("dpcnn_plus", {"embedding_dim": 16, "filters": 8, "num_blocks": 3})


def test_parameter_counts_and_structure():
    region, block, head = 3 * 300 * 250 + 250, 2 * (3 * 250 * 250 + 250), 250 * 5 + 5
    assert count_parameters(zoo.build("dpcnn")) == region + 7 * block + head == 2_855_005
    plus = zoo.build("dpcnn_plus")
    assert count_parameters(plus) == region + 14 * block + head == 5_483_505
    blocks = [layer for layer in plus.layers if isinstance(layer, ResidualConvBlock)]
    assert len(blocks) == 14 and all(b.num_convs == 2 for b in blocks)


def test_long_texts_go_down_the_pyramid():
    model = zoo.build("dpcnn", num_classes=2, vocabulary_size=50, embedding_dim=8, filters=8)
    ids = np.random.default_rng(0).integers(2, 50, size=(1, 300)).astype("int32")
    logits = to_numpy(model(ids))
    assert np.isfinite(logits).all()
    np.testing.assert_allclose(to_numpy(model(np.pad(ids, [(0, 0), (0, 77)]))), logits, atol=1e-5)
