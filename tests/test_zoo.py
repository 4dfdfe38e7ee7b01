"""The model zoo: listing, lookup errors, overrides, and every preset builds."""

import numpy as np
import pytest
from layer_checks import to_numpy

from keras_posattn import registry
from keras_posattn import zoo
from keras_posattn.models import MPSAN

SMALL = dict(vocabulary_size=30, embedding_dim=16)


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


def test_bare_build_uses_the_documented_defaults():
    """zoo.build("mpsan") alone works, as timm.create_model("resnet50") does:
    5 classes (SST-5), a 20,000-word vocabulary, the preset's max length."""
    model = zoo.build("mpsan")
    assert (model.num_classes, model.vocabulary_size, model.max_length) == (5, 20000, 64)
    assert model.embedding_dim == 300
    assert model.output_shape == (None, 5)


@pytest.mark.parametrize("family", ["mpsan", "bilstm", "han"])
@pytest.mark.parametrize("num_classes", ["3", 2.0, 1, True, None])
def test_num_classes_must_be_an_int_of_at_least_two(family, num_classes):
    """num_classes="3" was accepted and stored as a string."""
    config = dict(SMALL, num_classes=num_classes) if num_classes is not None else dict(SMALL)
    if num_classes is None:  # a None override is dropped: the preset's 5
        assert zoo.build(family, **config).num_classes == 5
        return
    with pytest.raises(ValueError, match=rf"num_classes must be an int >= 2, got {num_classes!r}\."):
        zoo.build(family, **config)
    assert zoo.build(family, **dict(SMALL, num_classes=np.int64(3))).output_shape == (None, 3)


def test_labels_outside_num_classes_are_refused_by_fit():
    model = zoo.build("mpsan", num_classes=3, max_length=6, **SMALL)
    model.compile()
    ids = np.full((4, 6), 2, "int32")
    with pytest.raises(ValueError, match=r"labels must be class ids 0..2 \(num_classes=3\), "
                                         r"found 0..5\."):
        model.fit(ids, np.array([0, 1, 2, 5]), verbose=0)
    with pytest.raises(ValueError, match="found -1..1"):
        model.evaluate(ids, np.array([0, 1, -1, 1]), verbose=0)


def test_unknown_override_names_the_argument():
    with pytest.raises(TypeError, match="branch_mask"):
        zoo.build("mpsan", branch_mask=["bw"], **SMALL)


def test_presets_resolve_their_base():
    released = zoo.get_preset("mpsan_released")
    paper = zoo.get_preset("mpsan")
    assert released["family"] == paper["family"] == "mpsan"
    assert released["config"]["faraway_rule"] == "released"
    assert released["config"]["fusion_bias"] == "shared"
    assert paper["config"]["faraway_rule"] == "paper"
    # Inherited, not restated.
    assert released["config"]["branch_masks"] == ["fa2", "fa3", "bw+sd", "fw+sd"]
    # The paper's recipe: the released code's weight EMA is never read there.
    assert released["recipe"] == paper["recipe"] and "ema" not in released["recipe"]
    # A preset's reported numbers are its own, never inherited.
    assert paper["reported"]["sst5"] == 52.53
    assert released["reported"] == {"parameters": "1.09M"}
    assert zoo.get_preset("mpsan_table5_no_fusion")["reported"] == {"sst5": 51.22}
    assert "52.53" not in zoo.get_preset("mpsan_table2_model1")["description"]
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
    if type(model).preprocessor_cls.input_rank == 2:
        # Documents: (batch, sentences, words); the third is an empty document.
        ids = np.stack([ids, ids[::-1], np.zeros_like(ids)])
    logits = to_numpy(model(ids, training=False))
    assert logits.shape == (3, 4)
    assert np.all(np.isfinite(logits))
    # Padding never changes the logits, whatever the variant (every padded axis).
    longer = np.pad(ids, [(0, 0)] + [(0, 10)] * (ids.ndim - 1))
    np.testing.assert_allclose(to_numpy(model(longer, training=False)), logits, atol=1e-5)


@pytest.mark.parametrize("name", zoo.list_models())
def test_every_preset_builds_bare(name):
    """Every model builds with no argument but its name (paper sizes, 5 classes,
    a 20,000-word vocabulary, the preset's ``max_length``), with the model
    contract's parts and a JSON config (tests/model_checks.py checks the
    whole contract, config round trip included, on a small build of each
    family)."""
    import json

    from keras_posattn.layers import ClassificationHead
    from keras_posattn.layers import TokenEmbedding
    from keras_posattn.models.base import ZooModel

    model = zoo.build(name)
    assert isinstance(model, ZooModel), type(model)
    assert model.num_classes == 5 and model.vocabulary_size == 20000
    preset_length = zoo.get_preset(name)["config"].get("max_length")
    if preset_length is not None:
        assert model.max_length == preset_length
    assert isinstance(model.embedding, TokenEmbedding) and isinstance(model.head, ClassificationHead)
    assert model.head.num_classes == 5 and model.embedding.output_dim == model.embedding_dim
    json.dumps(model.get_config())


def _fake_presets(monkeypatch, presets):
    from keras_posattn import registry

    monkeypatch.setattr(registry, "_raw_presets", lambda: {
        name: dict(table, source="zoo/test.toml") for name, table in presets.items()
    })


def test_preset_keys_are_checked_against_the_builder(monkeypatch):
    _fake_presets(monkeypatch, {
        "good": {"family": "mpsan", "config": {"dropout": 0.2}},
        "typo": {"family": "mpsan", "config": {"branch_mask": ["bw"]}},
        "bad_recipe": {"family": "mpsan", "recipe": {"learning_rat": 0.1}},
        "bad_demo": {"family": "mpsan", "demo": {"config": {"hiden_dim": 3}}},
        "no_family": {"family": "nope"},
        "orphan": {"base": "missing"},
    })
    assert zoo.get_preset("good")["config"] == {"dropout": 0.2}
    with pytest.raises(ValueError, match=r"zoo/test.toml: preset 'typo' sets unknown config key 'branch_mask'.*branch_masks"):
        zoo.get_preset("typo")
    with pytest.raises(ValueError, match=r"'bad_recipe' sets unknown recipe key 'learning_rat'.*learning_rate"):
        zoo.get_preset("bad_recipe")
    with pytest.raises(ValueError, match=r"'bad_demo' sets unknown demo.config key 'hiden_dim'"):
        zoo.get_preset("bad_demo")
    with pytest.raises(ValueError, match="unknown family 'nope'"):
        zoo.get_preset("no_family")
    with pytest.raises(ValueError, match="unknown base 'missing'"):
        zoo.get_preset("orphan")


def test_description_and_reported_are_not_inherited(monkeypatch):
    _fake_presets(monkeypatch, {
        "parent": {"family": "mpsan", "description": "the parent", "reported": {"sst5": 1.0},
                   "paper": "P", "config": {"dropout": 0.2}},
        "child": {"base": "parent", "config": {"l2": 0.0}},
    })
    child = zoo.get_preset("child")
    assert "description" not in child and "reported" not in child
    assert child["paper"] == "P" and child["config"] == {"dropout": 0.2, "l2": 0.0}


def test_presets_are_read_from_the_packaged_zoo_folder():
    import importlib.resources
    from pathlib import Path

    folder = importlib.resources.files("keras_posattn._zoo")
    assert (folder / "mpsan.toml").is_file()
    # The package ships the repository's top-level zoo/ folder (the folder
    # itself in an editable install, a copy in a built one).
    repo_zoo = Path(__file__).resolve().parents[1] / "zoo"
    shipped = {e.name: e.read_text(encoding="utf-8") for e in folder.iterdir()
               if e.name.endswith(".toml")}
    assert shipped == {p.name: p.read_text(encoding="utf-8") for p in repo_zoo.glob("*.toml")}


def test_registry_imports_no_model():
    """The registry is a leaf: models import it, it never imports them."""
    import subprocess
    import sys

    code = ("import sys, keras_posattn.registry as r; "
            "assert not any(m.startswith('keras_posattn.models') for m in sys.modules), "
            "sorted(m for m in sys.modules if m.startswith('keras_posattn'))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


def _as_lists(value):
    return [_as_lists(v) for v in value] if isinstance(value, (list, tuple)) else value


ROOT_PRESETS = sorted(n for n, table in registry._raw_presets().items() if "base" not in table)


@pytest.mark.parametrize("name", ROOT_PRESETS)
def test_constructor_defaults_are_the_paper_presets(name):
    """A family's constructor alone builds its paper's model: every argument
    a root preset (one without ``base``, the paper's model) sets is the
    constructor's default, so ``MPSAN()`` and ``zoo.build("mpsan")`` agree
    and a default changed in one place shows here."""
    preset = zoo.get_preset(name)
    defaults = registry.constructor_defaults(zoo.families()[preset["family"]])
    differ = {key: (defaults.get(key), value) for key, value in preset["config"].items()
              if _as_lists(defaults.get(key)) != _as_lists(value)}
    assert not differ, f"{name}: (constructor default, preset value) {differ}"
