"""EPN: the shared model checks, a 7-block EPN unchanged by 5 or 500 extra
padding tokens, texts shorter than its pyramid, parameter counts, maps; the
same with the deviation switches (shortcuts around the Bi-LSTM and the
attention, a LayerNorm after each block)."""

import numpy as np
import pytest
from layer_checks import to_numpy
from model_checks import run_model_test

from keras_posattn import zoo
from keras_posattn.utils import count_parameters

SMALL = {"embedding_dim": 16, "num_blocks": 3, "units": 8, "num_heads": 2,
         "region_filters": [3, 3, 2], "dropout": 0.2}
SEVEN = dict(SMALL, num_blocks=7)
DEVIATION = {"shortcuts": ["bilstm", "attention"], "block_norm": True}


# The paper's block (no switches) is the same model code with the switches
# off; its layer is checked against NumPy in test_pyramid_block and its model
# below (padding, lengths, counts, maps): its full model checks run with
# ``-m slow``, the default suite runs them on the 50d default's switches.
# Two blocks: the contract (padding, rows, saving, the export) is the model's,
# seven blocks are checked below; a block's Bi-LSTM makes each one ~6 s more.
@pytest.mark.parametrize("deviation", [pytest.param({}, marks=pytest.mark.slow), DEVIATION])
def test_shared_model_checks(deviation):
    run_model_test("epn", dict(SMALL, num_blocks=2, **deviation))


@pytest.mark.parametrize("deviation", [{}, DEVIATION])
def test_seven_blocks_unchanged_by_5_or_500_extra_padding_tokens(deviation):
    model = zoo.build("epn", num_classes=3, vocabulary_size=50, **SEVEN, **deviation)
    ids = np.random.default_rng(0).integers(2, 50, size=(2, 37)).astype("int32")
    ids[1, 20:] = 0  # a shorter text in the same batch
    outputs = [to_numpy(model(np.pad(ids, [(0, 0), (0, extra)]))) for extra in (5, 500)]
    np.testing.assert_allclose(outputs[0], outputs[1], atol=1e-5)
    np.testing.assert_allclose(outputs[0][1:], to_numpy(model(ids[1:, :20])), atol=1e-5)


@pytest.mark.parametrize("length", [1, 3, 100])
def test_texts_shorter_and_longer_than_the_pyramid(length):
    """A 7-block pyramid halves 128 positions to one; shorter texts stop
    halving at one position (a window with one real token pools to it)."""
    model = zoo.build("epn", num_classes=3, vocabulary_size=50, **SEVEN)
    ids = np.random.default_rng(length).integers(2, 50, size=(1, length)).astype("int32")
    logits = to_numpy(model(ids))
    assert np.isfinite(logits).all()
    np.testing.assert_allclose(to_numpy(model(np.pad(ids, [(0, 0), (0, 64)]))), logits, atol=1e-5)


def test_parameter_counts_at_paper_settings():
    regions = 3 * 300 * 30 + 30 + 4 * 300 * 30 + 30 + 5 * 300 * 40 + 40
    block = 2 * 4 * (50 * (100 + 50) + 50) + 4 * (100 * 100 + 100) + 2 * (3 * 100 * 100 + 100)
    head = 100 * 5 + 5
    assert regions == 123_100 and block == 161_000
    for name, blocks in (("epn", 7), ("epn_blocks1", 1), ("epn_blocks3", 3), ("epn_blocks5", 5)):
        assert count_parameters(zoo.build(name)) == regions + blocks * block + head, name
    assert count_parameters(zoo.build("epn")) == 1_250_605
    single = 3 * 300 * 100 + 100
    assert count_parameters(zoo.build("epn_region3")) == single + 7 * block + head
    # The deviation adds a LayerNorm (gamma and beta, 100 each) to every block.
    assert count_parameters(zoo.build("epn", **DEVIATION)) == 1_250_605 + 7 * 200


def test_every_block_gets_the_deviation_switches():
    model = zoo.build("epn", num_classes=3, vocabulary_size=50, **SEVEN, **DEVIATION)
    for block in model._layers_by_role["blocks"]:
        assert block.shortcuts == ("bilstm", "attention") and block.block_norm
    assert model.get_config()["shortcuts"] == ["bilstm", "attention"]
    paper = zoo.build("epn", num_classes=3, vocabulary_size=50, **SEVEN)
    assert all(not b.shortcuts and not b.block_norm for b in paper._layers_by_role["blocks"])


def test_attention_maps_per_block_and_head():
    model = zoo.build("epn", num_classes=3, vocabulary_size=50, **SMALL)
    maps = model.attention_maps(np.arange(2, 12, dtype="int32")[None])
    assert sorted(maps) == [f"block{k}/head{h}" for k in (1, 2, 3) for h in (1, 2)]
    assert maps["block1/head1"].shape == (1, 5, 5)
    assert maps["block3/head2"].shape == (1, 2, 2)


def test_region_filters_must_fill_the_blocks():
    with pytest.raises(ValueError, match="add up"):
        zoo.build("epn", region_filters=[30, 30, 30])
