"""Tests for keras_posattn.export: layout, versions, assets, the merged embedding
table, core ops only. The serving contract itself is in test_serving.py."""

import json
import os
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

from serving_fixtures import LABELS  # noqa: E402
from serving_fixtures import SENTENCES  # noqa: E402
from serving_fixtures import SEQ_LEN  # noqa: E402
from serving_fixtures import TEXTS  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tiny_classifier):
    return tiny_classifier


@pytest.fixture(scope="module")
def exported(tiny_export):
    return tiny_export


def _keras_reference(classifier, texts):
    return classifier.predict_probabilities(texts)


def _listing(directory):
    return sorted(p.name for p in Path(directory).iterdir())


# ---------------------------------------------------------------- layout ---


def test_layout_and_versions_only_grow(tiny, exported, tmp_path):
    # The module fixture exported version 1.
    assert exported.name == "1"
    assert (exported / "saved_model.pb").is_file()
    assert (exported / "variables").is_dir()
    assert _listing(exported.parent) == ["1"]

    base = tmp_path / "models"
    p1 = export.export_saved_model(tiny, "clf", base_dir=base)
    assert p1 == base / "clf" / "1"
    p2 = export.export_saved_model(tiny, "clf", base_dir=base)
    assert p2 == base / "clf" / "2"
    before = (p1 / "saved_model.pb").stat().st_mtime_ns

    # An export never replaces or precedes an existing version.
    for version in (1, 2):
        with pytest.raises(FileExistsError, match="never replaces"):
            export.export_saved_model(tiny, "clf", base_dir=base, version=version)
    assert (p1 / "saved_model.pb").stat().st_mtime_ns == before
    assert export.export_saved_model(tiny, "clf", base_dir=base, version=5).name == "5"
    with pytest.raises(FileExistsError):
        export.export_saved_model(tiny, "clf", base_dir=base, version=4)
    assert _listing(base / "clf") == ["1", "2", "5"]

    # Non-integer entries are ignored when picking the next version.
    (base / "clf" / "7").mkdir()
    (base / "clf" / "notes").mkdir()
    (base / "clf" / "99.txt").write_text("not a version")
    p8 = export.export_saved_model(tiny, "clf", base_dir=base)
    assert p8.name == "8" and (p8 / "saved_model.pb").is_file()
    assert not [n for n in _listing(base / "clf") if n.startswith(".")]


def test_assets_metadata_warmup_and_model_config(exported):
    assets = exported / "assets"
    assert (assets / "labels.txt").read_text().split("\n")[:3] == LABELS
    vocabulary = (assets / "vocabulary.txt").read_text(encoding="utf-8").split("\n")
    assert vocabulary[:2] == ["", "[UNK]"] and "movie" in vocabulary
    metadata = json.loads((exported / "assets.extra" / "keras_posattn.json").read_text())
    assert metadata["label_names"] == LABELS
    assert metadata["requires_tensorflow_text"] is False
    assert set(metadata["signatures"]) == {"serving_default", "token_ids", "classify"}
    assert (exported / "assets.extra" / "tf_serving_warmup_requests").stat().st_size > 0

    from google.protobuf import text_format
    from tensorflow_serving.config import model_server_config_pb2

    config = model_server_config_pb2.ModelServerConfig()
    text_format.Parse((exported.parent.parent / "models.config").read_text(), config)
    (entry,) = config.model_config_list.config
    assert (entry.name, entry.base_path, entry.model_platform) == ("tiny", "/models/tiny", "tensorflow")
    assert entry.model_version_policy.latest.num_versions == 2


def test_one_embedding_table_at_export(tmp_path):
    """Frozen pretrained rows and trained OOV rows leave as one table."""
    pre = TextPreprocessor.from_texts(SENTENCES, max_length=SEQ_LEN)
    model = zoo.build("mpsan_table5_no_attention", num_classes=len(LABELS),
                      vocabulary_size=pre.vocabulary_size, embedding_dim=8, max_length=SEQ_LEN)
    rng = np.random.default_rng(0)
    model.embedding.set_pretrained(rng.normal(size=(pre.vocabulary_size, 8)),
                                   pretrained_rows=np.arange(pre.vocabulary_size) % 2 == 0)
    model.embedding.embeddings.assign(rng.normal(size=(pre.vocabulary_size, 8)))  # "trained" rows
    classifier = TextClassifier(pre, model, label_names=LABELS)
    served = export.serving_classifier(classifier)
    assert served.model.trainable_embeddings == "all"
    assert len(served.model.embedding.weights) == 1
    np.testing.assert_allclose(served.predict_probabilities(TEXTS),
                               classifier.predict_probabilities(TEXTS), atol=1e-6)
    path = export.export_saved_model(classifier, "oov", base_dir=tmp_path)
    reader = tf.train.load_checkpoint(str(path / "variables" / "variables"))
    shapes = [tuple(s) for k, s in reader.get_variable_to_shape_map().items()
              if k.endswith("VARIABLE_VALUE")]
    assert shapes.count((pre.vocabulary_size, 8)) == 1
    # Every weight is saved once: the checkpoint holds exactly the served
    # model's values (no second copy of each variable).
    assert sum(int(np.prod(s)) for s in shapes) == sum(
        int(np.prod(w.shape)) for w in served.model.weights)
    np.testing.assert_allclose(export.predict_exported(path, TEXTS)["probabilities"],
                               classifier.predict_probabilities(TEXTS), atol=1e-5)


def test_export_uses_core_tensorflow_ops_only(exported, tmp_path):
    """Stock tensorflow/serving loads the export: every op of every function is
    a core TensorFlow op (checked in a process that imports no tensorflow_text)."""
    code = r"""
import sys
from tensorflow.core.protobuf import saved_model_pb2
from tensorflow.python.framework import op_def_registry
import tensorflow as tf
sm = saved_model_pb2.SavedModel()
sm.ParseFromString(open(sys.argv[1] + "/saved_model.pb", "rb").read())
ops = set()
for mg in sm.meta_graphs:
    ops |= {n.op for n in mg.graph_def.node}
    for f in mg.graph_def.library.function:
        ops |= {n.op for n in f.node_def}
functions = {f.signature.name for mg in sm.meta_graphs for f in mg.graph_def.library.function}
unknown = sorted(o for o in ops if o not in functions and op_def_registry.get(o) is None)
assert "tensorflow_text" not in sys.modules
print("UNKNOWN:" + ",".join(unknown))
"""
    proc = subprocess.run([sys.executable, "-c", code, str(exported)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().endswith("UNKNOWN:"), proc.stdout


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
        export.export_saved_model(tiny, "clf", base_dir=base, version=3)

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


def test_predict_exported_in_process(tiny, exported):
    out = export.predict_exported(exported, TEXTS[:1] + TEXTS[2:])
    assert set(out) == set(export.OUTPUT_KEYS)
    ref = _keras_reference(tiny, TEXTS[:1] + TEXTS[2:])
    np.testing.assert_allclose(out["probabilities"], ref, rtol=0, atol=1e-5)
    np.testing.assert_array_equal(out["class_id"], ref.argmax(axis=-1))
    assert list(out["label"]) == [LABELS[i] for i in out["class_id"]]
    single = export.predict_exported(exported, "the movie was great")
    assert single["probabilities"].shape == (1, len(LABELS))


def test_a_killed_exports_temporary_folder_is_cleaned_or_reported(tiny, tmp_path, capsys):
    """A killed export leaves ``.tmp-<version>-<host>-<pid>-<hex>``: the next
    export removes it when that process is gone from this host, and warns
    about one it cannot tell (another host's, or an older name)."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    model_dir = tmp_path / "models" / "clf"
    killed = model_dir / f".tmp-1-{export._host_tag()}-{gone.pid}-0123abcd"
    other_host = model_dir / f".tmp-1-elsewhere-{os.getpid()}-0123abcd"
    older = model_dir / ".tmp-1-0123abcd"
    for folder in (killed, other_host, older):
        (folder / "variables").mkdir(parents=True)
    with pytest.warns(UserWarning, match="unfinished export of another process") as warned:
        path = export.export_saved_model(tiny, "clf", base_dir=tmp_path / "models")
    assert path.name == "1" and not killed.exists()
    assert f"left by a killed export (pid {gone.pid})" in capsys.readouterr().out
    assert older.exists() and {str(older)} <= {str(w.message).split(" ")[0] for w in warned}


def test_a_concurrent_export_taking_the_version_is_one_line(tiny, tmp_path, monkeypatch, capsys):
    """Two exports racing for a version: the loser's rename fails; the
    command line says so in one line (exit status 2) and leaves no version
    half-written."""
    import errno

    from keras_posattn import cli

    source = tmp_path / "clf.keras"
    tiny.save(source)

    def taken(src, dst):
        raise OSError(errno.ENOTEMPTY, "Directory not empty", str(dst))

    monkeypatch.setattr(export.os, "rename", taken)
    assert cli.main(["export", str(source), "--name", "clf", "--base", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert "written by another export meanwhile; export again" in err
    assert len(err.strip().splitlines()) == 1
    assert [p.name for p in (tmp_path / "m" / "clf").iterdir()] == []
