"""Tests for keras_posattn.export (TF Serving SavedModel export)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_posattn import export  # noqa: E402
from keras_posattn import zoo  # noqa: E402
from keras_posattn.models import TextClassifier  # noqa: E402
from keras_posattn.preprocessing import TextPreprocessor  # noqa: E402

SEQ_LEN = 8
LABELS = ["negative", "neutral", "positive"]
SENTENCES = [
    "the movie was great",
    "the plot was bad",
    "the acting was ok",
    "a great cast and a bad script",
    "boring but the music was fine",
]
# "" -> all padding; the long text has more than SEQ_LEN tokens (truncated);
# the third is all out-of-vocabulary; the last needs standardization.
TEXTS = [
    "the movie was great",
    "",
    "the plot was bad and the acting was bad and the music was bad too " * 3,
    "zzz qqq unknownword",
    "The PLOT, the acting... GREAT!",
]


def _make_classifier(labels=LABELS):
    pre = TextPreprocessor.from_texts(SENTENCES, max_length=SEQ_LEN)
    keras.utils.set_random_seed(1)
    model = zoo.build("mpsan_table5_no_attention", num_classes=len(LABELS),
                      vocabulary_size=pre.vocabulary_size, embedding_dim=8, max_length=SEQ_LEN)
    # Large weights so the classes are well separated (no argmax ties).
    rng = np.random.default_rng(2)
    for w in model.trainable_weights:
        w.assign(rng.normal(0.0, 1.0, size=tuple(w.shape)).astype("float32"))
    return TextClassifier(pre, model, label_names=labels)


@pytest.fixture(scope="module")
def tiny():
    return _make_classifier()


@pytest.fixture(scope="module")
def exported(tiny, tmp_path_factory):
    base = tmp_path_factory.mktemp("repo")
    return export.export_saved_model(tiny, "tiny", base_dir=base)


def _keras_reference(classifier, texts):
    return classifier.predict_probabilities(texts)


def _listing(directory):
    return sorted(p.name for p in Path(directory).iterdir())


# ---------------------------------------------------------------- layout ---


def test_layout_versions_and_overwrite(tiny, exported, tmp_path):
    # The module fixture exported version 1.
    assert exported.name == "1"
    assert (exported / "saved_model.pb").is_file()
    assert (exported / "variables").is_dir()
    assert _listing(exported.parent) == ["1"]

    base = tmp_path / "models"
    p1 = export.export_saved_model(tiny, "clf", base_dir=base)
    assert p1 == base / "clf" / "1"
    assert (base / "clf" / "1" / "saved_model.pb").is_file()

    p2 = export.export_saved_model(tiny, "clf", base_dir=base)
    assert p2 == base / "clf" / "2"
    assert (p2 / "saved_model.pb").is_file()

    with pytest.raises(FileExistsError):
        export.export_saved_model(tiny, "clf", base_dir=base, version=1)
    assert _listing(base / "clf") == ["1", "2"]

    before = (p1 / "saved_model.pb").stat().st_mtime_ns
    p1b = export.export_saved_model(tiny, "clf", base_dir=base, version=1, overwrite=True)
    assert p1b == p1 and (p1 / "saved_model.pb").is_file()
    assert (p1 / "saved_model.pb").stat().st_mtime_ns >= before
    assert _listing(base / "clf") == ["1", "2"]

    # Non-integer entries are ignored when picking the next version.
    (base / "clf" / "7").mkdir()
    (base / "clf" / "notes").mkdir()
    (base / "clf" / "99.txt").write_text("not a version")
    p8 = export.export_saved_model(tiny, "clf", base_dir=base)
    assert p8.name == "8" and (p8 / "saved_model.pb").is_file()
    assert not [n for n in _listing(base / "clf") if n.startswith(".")]


def test_failed_export_leaves_no_version_and_no_temp_dir(tiny, tmp_path, monkeypatch):
    base = tmp_path / "models"
    export.export_saved_model(tiny, "clf", base_dir=base)
    assert _listing(base / "clf") == ["1"]

    # keras.export.ExportArchive() returns a backend subclass instance (it is
    # not even an isinstance of ExportArchive), so patch the class actually used.
    archive_cls = type(keras.export.ExportArchive())
    real_write_out = archive_cls.write_out
    seen = []

    def write_then_fail(self, filepath, *args, **kwargs):
        real_write_out(self, filepath, *args, **kwargs)  # fully written temp dir
        seen.append(Path(filepath))
        raise RuntimeError("simulated failure after writing")

    monkeypatch.setattr(archive_cls, "write_out", write_then_fail)
    with pytest.raises(RuntimeError, match="simulated"):
        export.export_saved_model(tiny, "clf", base_dir=base)
    with pytest.raises(RuntimeError, match="simulated"):
        export.export_saved_model(tiny, "clf", base_dir=base, version=1, overwrite=True)

    assert len(seen) == 2
    assert all(p.parent == base / "clf" and p.name.startswith(".tmp-") for p in seen)
    assert not any(p.exists() for p in seen)
    assert _listing(base / "clf") == ["1"]
    assert (base / "clf" / "1" / "saved_model.pb").is_file()


def test_invalid_arguments_write_nothing(tiny, tmp_path):
    base = tmp_path / "models"
    with pytest.raises(ValueError, match="label names"):
        TextClassifier(tiny.preprocessor, tiny.model, label_names=["a", "b"])
    with pytest.raises(TypeError, match="TextClassifier"):
        export.export_saved_model(tiny.model, "clf", base_dir=base)
    with pytest.raises(ValueError):
        export.export_saved_model(tiny, "../escape", base_dir=base)
    with pytest.raises(ValueError):
        export.export_saved_model(tiny, "clf", base_dir=base, version=0)
    assert not base.exists()


# ------------------------------------------------- fresh-process serving ---

_CHILD = r"""
import json, sys
import tensorflow as tf

path, texts = sys.argv[1], json.loads(sys.argv[2])
fn = tf.saved_model.load(path).signatures["serving_default"]
out = fn(text=tf.constant(texts, dtype=tf.string))
assert "keras_posattn" not in sys.modules, "child must not import keras_posattn"
print("RESULT:" + json.dumps({
    "inputs": sorted(fn.structured_input_signature[1]),
    "outputs": {k: [v.dtype.name, v.shape.as_list()] for k, v in fn.structured_outputs.items()},
    "probabilities": out["probabilities"].numpy().tolist(),
    "class_id": out["class_id"].numpy().tolist(),
    "label": [b.decode("utf-8") for b in out["label"].numpy().tolist()],
}))
"""


def test_fresh_process_matches_keras(tiny, exported, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(exported), json.dumps(TEXTS)],
        cwd=tmp_path,  # keep the repo off the child's sys.path[0]
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [l for l in proc.stdout.splitlines() if l.startswith("RESULT:")][-1]
    got = json.loads(line[len("RESULT:") :])

    assert got["inputs"] == ["text"]
    assert got["outputs"] == {
        "probabilities": ["float32", [None, len(LABELS)]],
        "class_id": ["int64", [None]],
        "label": ["string", [None]],
    }

    probs = np.asarray(got["probabilities"], dtype=np.float32)
    class_id = np.asarray(got["class_id"])
    ref = _keras_reference(tiny, TEXTS)
    assert probs.shape == ref.shape == (len(TEXTS), len(LABELS))
    # "" is all padding: the zoo's masked pooling gives zeros, never NaN.
    assert np.isfinite(probs).all()
    np.testing.assert_allclose(probs, ref, rtol=0, atol=1e-5)
    np.testing.assert_array_equal(class_id, ref.argmax(axis=-1))
    assert ((class_id >= 0) & (class_id < len(LABELS))).all()
    assert got["label"] == [LABELS[i] for i in class_id]


def test_predict_exported_in_process(tiny, exported):
    out = export.predict_exported(exported, TEXTS[:1] + TEXTS[2:])
    assert set(out) == set(export.OUTPUT_KEYS)
    ref = _keras_reference(tiny, TEXTS[:1] + TEXTS[2:])
    np.testing.assert_allclose(out["probabilities"], ref, rtol=0, atol=1e-5)
    np.testing.assert_array_equal(out["class_id"], ref.argmax(axis=-1))
    assert list(out["label"]) == [LABELS[i] for i in out["class_id"]]
    single = export.predict_exported(exported, "the movie was great")
    assert single["probabilities"].shape == (1, len(LABELS))


# --------------------------------------------------------- saved_model_cli ---


def _saved_model_cli():
    exe = Path(sys.executable).parent / "saved_model_cli"
    if exe.exists():
        return [str(exe)]
    return [sys.executable, "-m", "tensorflow.python.tools.saved_model_cli"]


def test_saved_model_cli_shows_signature(exported):
    proc = subprocess.run(
        _saved_model_cli() + ["show", "--dir", str(exported), "--all"],
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    for needle in ("serving_default", "text", "probabilities", "class_id", "label", "DT_STRING"):
        assert needle in out
    # Exactly one input named `text` (so REST {"instances": [...]} maps onto
    # it) and exactly the three outputs, in the serving_default SignatureDef.
    block = out.split("signature_def['serving_default']:", 1)[1].split("signature_def[", 1)[0]
    block = block.split("Concrete Functions:", 1)[0]
    assert re.findall(r"inputs\['([^']+)'\]", block) == ["text"]
    assert sorted(re.findall(r"outputs\['([^']+)'\]", block)) == sorted(export.OUTPUT_KEYS)
    text_info = block.split("inputs['text']", 1)[1].split("outputs[", 1)[0]
    assert "DT_STRING" in text_info and "(-1)" in text_info
