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


def _vocabulary():
    words = sorted({w for s in SENTENCES for w in s.split()})
    return words


def _make_vectorizer():
    return keras.layers.TextVectorization(
        vocabulary=_vocabulary(), output_sequence_length=SEQ_LEN
    )


def _make_model(vocab_size):
    init = keras.initializers.RandomNormal
    return keras.Sequential(
        [
            keras.Input(shape=(SEQ_LEN,), dtype="int64"),
            keras.layers.Embedding(
                vocab_size, 8, mask_zero=True, embeddings_initializer=init(stddev=1.0, seed=1)
            ),
            keras.layers.GlobalAveragePooling1D(),
            # Large-ish weights so the classes are well separated (no argmax ties).
            keras.layers.Dense(
                len(LABELS),
                kernel_initializer=init(stddev=1.0, seed=2),
                bias_initializer=init(stddev=0.5, seed=3),
            ),
        ]
    )


@pytest.fixture(scope="module")
def tiny():
    vectorizer = _make_vectorizer()
    # Deliberately NOT calling the vectorizer here: export must cope with a
    # `vocabulary=` TextVectorization that was never called (unbuilt).
    assert not vectorizer.built
    model = _make_model(len(_vocabulary()) + 2)  # + padding "" and "[UNK]"
    return model, vectorizer


@pytest.fixture(scope="module")
def exported(tiny, tmp_path_factory):
    model, vectorizer = tiny
    base = tmp_path_factory.mktemp("repo")
    path = export.export_saved_model(model, vectorizer, LABELS, "tiny", base_dir=base)
    return path


def _keras_reference(model, vectorizer, texts):
    logits = model(vectorizer(tf.constant(texts)), training=False)
    return np.asarray(keras.ops.convert_to_numpy(keras.ops.softmax(logits, axis=-1)))


def _listing(directory):
    return sorted(p.name for p in Path(directory).iterdir())


# ---------------------------------------------------------------- layout ---


def test_layout_versions_and_overwrite(tiny, exported, tmp_path):
    model, vectorizer = tiny
    # The module fixture exported an untouched vectorizer as version 1.
    assert exported.name == "1"
    assert (exported / "saved_model.pb").is_file()
    assert (exported / "variables").is_dir()
    assert _listing(exported.parent) == ["1"]

    base = tmp_path / "models"
    p1 = export.export_saved_model(model, vectorizer, LABELS, "clf", base_dir=base)
    assert p1 == base / "clf" / "1"
    assert (base / "clf" / "1" / "saved_model.pb").is_file()

    p2 = export.export_saved_model(model, vectorizer, LABELS, "clf", base_dir=base)
    assert p2 == base / "clf" / "2"
    assert (p2 / "saved_model.pb").is_file()

    with pytest.raises(FileExistsError):
        export.export_saved_model(model, vectorizer, LABELS, "clf", base_dir=base, version=1)
    assert _listing(base / "clf") == ["1", "2"]

    before = (p1 / "saved_model.pb").stat().st_mtime_ns
    p1b = export.export_saved_model(
        model, vectorizer, LABELS, "clf", base_dir=base, version=1, overwrite=True
    )
    assert p1b == p1 and (p1 / "saved_model.pb").is_file()
    assert (p1 / "saved_model.pb").stat().st_mtime_ns >= before
    assert _listing(base / "clf") == ["1", "2"]

    # Non-integer entries are ignored when picking the next version.
    (base / "clf" / "7").mkdir()
    (base / "clf" / "notes").mkdir()
    (base / "clf" / "99.txt").write_text("not a version")
    p8 = export.export_saved_model(model, vectorizer, LABELS, "clf", base_dir=base)
    assert p8.name == "8" and (p8 / "saved_model.pb").is_file()
    assert not [n for n in _listing(base / "clf") if n.startswith(".")]


def test_failed_export_leaves_no_version_and_no_temp_dir(tiny, tmp_path, monkeypatch):
    model, vectorizer = tiny
    base = tmp_path / "models"
    export.export_saved_model(model, vectorizer, LABELS, "clf", base_dir=base)
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
        export.export_saved_model(model, vectorizer, LABELS, "clf", base_dir=base)
    with pytest.raises(RuntimeError, match="simulated"):
        export.export_saved_model(
            model, vectorizer, LABELS, "clf", base_dir=base, version=1, overwrite=True
        )

    assert len(seen) == 2
    assert all(p.parent == base / "clf" and p.name.startswith(".tmp-") for p in seen)
    assert not any(p.exists() for p in seen)
    assert _listing(base / "clf") == ["1"]
    assert (base / "clf" / "1" / "saved_model.pb").is_file()


def test_invalid_arguments_write_nothing(tiny, tmp_path):
    model, vectorizer = tiny
    base = tmp_path / "models"
    with pytest.raises(ValueError, match="label_names"):
        export.export_saved_model(model, vectorizer, ["a", "b"], "clf", base_dir=base)
    with pytest.raises(ValueError):
        export.export_saved_model(model, vectorizer, LABELS, "../escape", base_dir=base)
    with pytest.raises(ValueError):
        export.export_saved_model(model, vectorizer, LABELS, "clf", base_dir=base, version=0)
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
    model, vectorizer = tiny
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
    ref = _keras_reference(model, vectorizer, TEXTS)
    assert probs.shape == ref.shape == (len(TEXTS), len(LABELS))
    # NOTE: for "" every position is padding, so the stock masked
    # GlobalAveragePooling1D computes 0/0 and Keras itself returns NaN; the
    # export must reproduce the model faithfully (hence equal_nan).
    np.testing.assert_allclose(probs, ref, rtol=0, atol=1e-5, equal_nan=True)
    finite = np.isfinite(ref).all(axis=-1)
    assert finite[[0, 2, 3, 4]].all()  # everything but "" is well defined
    np.testing.assert_array_equal(class_id[finite], ref[finite].argmax(axis=-1))
    assert ((class_id >= 0) & (class_id < len(LABELS))).all()
    assert got["label"] == [LABELS[i] for i in class_id]


def test_predict_exported_in_process(tiny, exported):
    model, vectorizer = tiny
    out = export.predict_exported(exported, TEXTS[:1] + TEXTS[2:])
    assert set(out) == set(export.OUTPUT_KEYS)
    ref = _keras_reference(model, vectorizer, TEXTS[:1] + TEXTS[2:])
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
