"""The model zoo: listing, lookup errors, overrides, and every preset builds."""

import numpy as np
import pytest
from layer_checks import to_numpy

from keras_posattn import zoo
from keras_posattn.models import MPSAN

SMALL = dict(vocabulary_size=30, embedding_dim=16, hidden_dim=16, head_units=16)


def test_list_models_patterns():
    everything = zoo.list_models()
    assert everything == sorted(everything)
    assert {"mpsan", "mpsan_released"} <= set(everything)
    assert zoo.list_models("*") == everything
    assert zoo.list_models("mpsan_table2_*") == [f"mpsan_table2_model{i}" for i in range(7)]
    assert zoo.list_models("mpsan_table3_*") == [
        "mpsan_table3_bf_fg",
        "mpsan_table3_bf_tpw",
        "mpsan_table3_mul_fg",
    ]
    assert zoo.list_models("mpsan_table4_md_?u?") == ["mpsan_table4_md_mul"]
    assert zoo.list_models("mpsan") == ["mpsan"]
    assert zoo.list_models("no_such_model*") == []


@pytest.mark.parametrize("typo, close", [("mpsam", "mpsan"), ("mpsan_relased", "mpsan_released")])
def test_unknown_name_lists_close_matches(typo, close):
    with pytest.raises(ValueError) as info:
        zoo.build(typo, num_classes=3, **SMALL)
    message = str(info.value)
    assert f"Unknown model {typo!r}" in message
    assert "Did you mean" in message and close in message.split("Known models")[0]
    with pytest.raises(ValueError, match="Did you mean"):
        zoo.get_preset(typo)


def test_unknown_name_without_close_match():
    with pytest.raises(ValueError) as info:
        zoo.get_preset("zzzzzzzz")
    message = str(info.value)
    assert "Did you mean" not in message
    assert "mpsan" in message  # the known models are listed


def test_none_overrides_are_ignored():
    preset = zoo.get_preset("mpsan")
    model = zoo.build("mpsan", num_classes=3, dropout=None, l2=None, **SMALL)
    assert model.dropout == preset["config"]["dropout"] == 0.3
    assert model.l2 == preset["config"]["l2"]
    assert model.num_classes == 3
    # A non-None override wins.
    model = zoo.build("mpsan", num_classes=3, dropout=0.1, **SMALL)
    assert model.dropout == 0.1


def test_num_classes_required():
    with pytest.raises(ValueError, match="num_classes"):
        zoo.build("mpsan", **SMALL)


def test_presets_resolve_their_base():
    released = zoo.get_preset("mpsan_released")
    paper = zoo.get_preset("mpsan")
    assert released["family"] == paper["family"] == "mpsan"
    assert released["config"]["faraway_rule"] == "released"
    assert released["config"]["fusion_bias"] == "shared"
    assert paper["config"]["faraway_rule"] == "paper"
    # Inherited, not restated.
    assert released["config"]["branch_masks"] == ["fa2", "fa3", "bw+sd", "fw+sd"]
    # The released code adds a weight EMA to the paper's recipe.
    assert released["recipe"] == {**paper["recipe"], "ema": 0.999}
    table3 = zoo.get_preset("mpsan_table3_bf_fg")["config"]
    assert table3["branch_masks"] == ["bw", "fw"] and table3["fusion"] == "gate"


def test_build_names_the_model_after_the_preset():
    model = zoo.build("mpsan_released", num_classes=2, **SMALL)
    assert isinstance(model, MPSAN)
    assert model.name == "mpsan_released"
    assert model.faraway_rule == "released"


@pytest.mark.parametrize("name", zoo.list_models())
def test_every_preset_builds_and_runs(name):
    model = zoo.build(name, num_classes=4, **SMALL)
    ids = np.array([[5, 6, 7, 8, 0, 0], [9, 2, 0, 0, 0, 0], [3, 0, 0, 0, 0, 0]], dtype="int32")
    logits = to_numpy(model(ids, training=False))
    assert logits.shape == (3, 4)
    assert np.all(np.isfinite(logits))
    # Padding never changes the logits, whatever the variant.
    longer = np.pad(ids, [(0, 0), (0, 10)])
    np.testing.assert_allclose(to_numpy(model(longer, training=False)), logits, atol=1e-5)
