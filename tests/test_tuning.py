"""KerasTuner searches: the spaces, the CLI, resumption, TensorBoard's HParams
dashboard (read back from the event files and from a running TensorBoard), and
KerasTuner's chief/worker mode across processes."""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import keras_tuner
import pytest
import tensorflow as tf

from keras_posattn import cli
from keras_posattn import tuning
from keras_posattn import zoo
from keras_posattn.hypermodel import defaults_of

SMALL = ["--demo-size", "300", "--epochs", "1", "--set", "embedding_dim=16", "--verbose", "0"]


def _events(directory):
    """tag -> number of values, over every event file below ``directory``."""
    tags = {}
    for path in Path(directory).rglob("*tfevents*"):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for value in event.summary.value:
                tags[value.tag] = tags.get(value.tag, 0) + 1
    return tags


def _trial_dirs(project):
    return sorted(p.name for p in Path(project).glob("trial_*"))


def test_mpsan_space_defaults_are_the_paper_model(capsys):
    """With every hyperparameter at its default, the search builds the paper's
    MPSAN (the preset's masks, dropout and learning rate)."""
    from keras_posattn._tuning.mpsan import expand
    from keras_posattn.training import trainer

    assert expand("fa,fa,bw+sd,fw+sd", 2, 3) == ["fa2", "fa3", "bw+sd", "fw+sd"]
    assert expand("fa+sd,fa+sd,bw+sd,fw+sd", 1, 4) == ["fa1+sd", "fa4+sd", "bw+sd", "fw+sd"]
    assert expand("bw,fw", None, None) == ["bw", "fw"]
    settings = trainer.resolve_settings("mpsan", demo=True, overrides={"embedding_dim": 8})
    data = trainer.prepare_data(settings, trainer.RunOptions(model_name="mpsan", demo_size=100))
    hypermodel = tuning.hypermodel_for("mpsan", data, settings=settings)
    assert type(hypermodel).__name__ == "HyperMPSAN"
    hp = keras_tuner.HyperParameters()
    model = hypermodel.build(hp)
    preset = zoo.get_preset("mpsan")
    assert model.branch_masks == preset["config"]["branch_masks"]
    assert model.dropout == settings.config["dropout"]
    assert float(model.optimizer.learning_rate) == pytest.approx(settings.recipe.learning_rate)
    names = {h.name for h in hp.space}
    assert {"mask_set", "faraway_near", "faraway_gap", "learning_rate", "dropout"} <= names
    # A trial's values come back as model arguments.
    hp.values.update(mask_set="fa,fa,bw,fw", faraway_near=3, faraway_gap=2, dropout=0.2)
    overrides, recipe = tuning.overrides_of(hypermodel, hp)
    assert overrides == {"dropout": 0.2, "branch_masks": ["fa3", "fa5", "bw", "fw"]}


def test_a_trial_scores_dev_on_the_moving_average_when_the_recipe_has_one(monkeypatch):
    """With a weight EMA in the recipe a trial's dev accuracy, which the tuner
    ranks, is the average's (Keras' SwapEMAWeights, as in a training run); a
    recipe without ``ema`` adds nothing."""
    import dataclasses

    import keras

    from keras_posattn.training import trainer

    seen = []
    monkeypatch.setattr(keras.Model, "fit", lambda self, *a, **k: seen.append(k["callbacks"]))
    plain = trainer.resolve_settings("mpsan", demo=True, overrides={"embedding_dim": 8})
    data = trainer.prepare_data(plain, trainer.RunOptions(model_name="mpsan", demo_size=60))
    for ema in (0.99, None):
        settings = dataclasses.replace(plain, recipe=plain.recipe.replace(ema=ema))
        hypermodel = tuning.hypermodel_for("mpsan", data, settings=settings)
        hp = keras_tuner.HyperParameters()
        hypermodel.fit(hp, hypermodel.build(hp))
        swaps = [c for c in seen[-1] if isinstance(c, keras.callbacks.SwapEMAWeights)]
        assert len(swaps) == (1 if ema else 0)
        assert all(not c.swap_on_epoch for c in swaps)  # no selection in a trial


@pytest.fixture(scope="module")
def search(tmp_path_factory):
    root = tmp_path_factory.mktemp("search")
    code = cli.main(["tune", "mpsan", "--max-trials", "2", "--directory", str(root), *SMALL])
    assert code == 0
    return root / "mpsan"


def test_tune_cli_runs_a_short_search_and_logs_every_trial(search, capsys):
    assert len(_trial_dirs(search)) == 2
    logs = search / "logs"
    root_tags = _events(logs)
    assert root_tags.get("_hparams_/experiment") == 1  # the HParams experiment
    trials = sorted(p for p in logs.iterdir() if p.is_dir())
    assert len(trials) == 2
    for trial in trials:
        tags = _events(trial)
        assert {"_hparams_/session_start_info", "_hparams_/session_end_info"} <= set(tags)
        assert {"epoch_loss", "epoch_accuracy", "epoch_learning_rate", "keras"} <= set(tags)
        assert any(t.startswith("maps/attention/") for t in tags), sorted(tags)
        assert any(t.startswith("maps/pooling/") for t in tags)


def test_an_interrupted_search_resumes(search):
    before = {p: (p / "trial.json").stat().st_mtime_ns for p in search.glob("trial_*")}
    code = cli.main(["tune", "mpsan", "--max-trials", "3", "--directory", str(search.parent),
                     *SMALL])
    assert code == 0
    assert len(_trial_dirs(search)) == 3  # one more trial, the two others kept
    for path, mtime in before.items():
        assert json.loads((path / "trial.json").read_text())["status"] == "COMPLETED"


def test_tensorboard_serves_the_runs_and_the_hparams_dashboard(search):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    exe = Path(sys.executable).parent / "tensorboard"
    proc = subprocess.Popen([str(exe), "--logdir", str(search / "logs"), "--host", "127.0.0.1",
                             "--port", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        base = f"http://127.0.0.1:{port}"
        runs = None
        for _ in range(120):
            try:
                runs = json.loads(urllib.request.urlopen(base + "/data/runs", timeout=5).read())
                if runs:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        assert runs and any("train" in r for r in runs), runs
        request = urllib.request.Request(base + "/data/plugin/hparams/experiment",
                                         data=b"{}", method="POST",
                                         headers={"Content-Type": "application/json"})
        experiment = json.loads(urllib.request.urlopen(request, timeout=30).read())
        names = {h["name"] for h in experiment["hparamInfos"]}
        assert {"learning_rate", "dropout", "mask_set"} <= names
        metrics = {(m["name"]["group"], m["name"]["tag"]) for m in experiment["metricInfos"]}
        assert ("validation", "epoch_accuracy") in metrics
        body = json.dumps({"startIndex": 0, "sliceSize": 10,
                           "allowedStatuses": ["STATUS_UNKNOWN", "STATUS_SUCCESS",
                                               "STATUS_FAILURE", "STATUS_RUNNING"]}).encode()
        request = urllib.request.Request(base + "/data/plugin/hparams/session_groups",
                                         data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        groups = json.loads(urllib.request.urlopen(request, timeout=30).read())
        assert groups["totalSize"] >= 2
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_distributed_search_chief_and_two_workers(tmp_path):
    """KerasTuner's own chief/worker mode: a chief process serves the oracle on
    127.0.0.1, two worker processes take trials from it, the search completes."""
    port = _free_port()
    # Kim's CNN: the mechanism is KerasTuner's, not a family's (its step
    # traces in a fifth of MPSAN's time; three processes share the cores).
    command = [sys.executable, "-m", "keras_posattn.cli", "tune", "kim_cnn_static",
               "--max-trials", "3", "--directory", str(tmp_path), "--demo-size", "200",
               "--epochs", "1", "--set", "embedding_dim=8", "--set", "filters=8",
               "--verbose", "1"]
    base_env = dict(os.environ, KERASTUNER_ORACLE_IP="127.0.0.1",
                    KERASTUNER_ORACLE_PORT=str(port))
    processes = {}
    for role in ("chief", "tuner0", "tuner1"):
        processes[role] = subprocess.Popen(
            command, env=dict(base_env, KERASTUNER_TUNER_ID=role), cwd=tmp_path,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if role == "chief":
            time.sleep(2)  # let the oracle server start listening
    outputs = {}
    try:
        for role, proc in processes.items():
            outputs[role], _ = proc.communicate(timeout=600)
            assert proc.returncode == 0, (role, outputs[role][-3000:])
    finally:
        for proc in processes.values():
            if proc.poll() is None:
                proc.kill()
    trials = [json.loads(p.read_text()) for p in (tmp_path / "kim_cnn_static").glob("trial_*/trial.json")]
    assert len(trials) == 3 and all(t["status"] == "COMPLETED" for t in trials)
    # The trials were shared out: both workers ran some, the chief served the
    # oracle and ran none, and together they ran each trial once.
    runs = {role: outputs[role].count(f"Trial on {role}:") for role in outputs}
    assert runs["chief"] == 0 and runs["tuner0"] >= 1 and runs["tuner1"] >= 1, runs
    assert runs["tuner0"] + runs["tuner1"] == 3
    for role in ("tuner0", "tuner1"):
        assert "Worker done" in outputs[role]
    assert "Best trials" in outputs["chief"]


@pytest.mark.parametrize("name, expected", [
    ("cspan", {"num_queries": 16, "num_layers": 1, "query_fusion": "concat"}),
    ("epn", {"num_blocks": 7, "region_sizes": [3, 4, 5], "region_filters": [30, 30, 40]}),
    ("spe_cnn", {"filters": 128, "kernel_size": 3, "position_encoding": "interleaved"}),
    ("hcan", {"units": 512, "num_heads": 8, "kernel_size": 3, "self_attentions": 2,
              "pooling": "target"}),
    ("hcan_flat", {"units": 512, "num_heads": 8, "kernel_size": 3, "self_attentions": 2,
                   "pooling": "target"}),
])
def test_family_spaces_default_to_the_paper(name, expected):
    from keras_posattn.training import trainer

    settings = trainer.resolve_settings(name, demo=False)
    hypermodel = tuning.searches()[name].__new__(tuning.searches()[name])
    hypermodel.settings = settings
    hypermodel._defaults = defaults_of(settings.family, settings.config)
    hp = keras_tuner.HyperParameters()
    assert hypermodel.space(hp) == expected
    names = {h.name for h in hp.space}
    assert ("num_queries" in names) == (name == "cspan")
    if name == "cspan":
        (queries,) = [h for h in hp.space if h.name == "num_queries"]
        assert (queries.min_value, queries.max_value, queries.sampling) == (1, 128, "log")
    elif name == "epn":
        (blocks,) = [h for h in hp.space if h.name == "num_blocks"]
        assert (blocks.min_value, blocks.max_value) == (1, 7)


@pytest.mark.slow  # the search of test_tune_cli_runs_a_short_search_and_logs_every_trial, and
#                   test_family_spaces_default_to_the_paper[cspan] for CSPAN's space
def test_tune_cspan_quick_search(tmp_path):
    """The newcomer's first try: `keras-posattn tune cspan --max-trials 2 --epochs 1`."""
    code = cli.main(["tune", "cspan", "--max-trials", "2", "--directory", str(tmp_path), *SMALL])
    assert code == 0
    trials = [json.loads(p.read_text()) for p in (tmp_path / "cspan").glob("trial_*/trial.json")]
    assert len(trials) == 2 and all(t["status"] == "COMPLETED" for t in trials)
    assert all("num_queries" in t["hyperparameters"]["values"] for t in trials)


def test_tune_hcan_on_documents(tmp_path):
    """A hierarchical family searches on the embedded task's document variant
    (token ids (batch, sentences, words), sentence-level attention images)."""
    code = cli.main(["tune", "hcan", "--max-trials", "1", "--directory", str(tmp_path),
                     "--demo-size", "200", "--epochs", "1", "--verbose", "0"])
    assert code == 0
    trials = [json.loads(p.read_text()) for p in (tmp_path / "hcan").glob("trial_*/trial.json")]
    assert len(trials) == 1 and all(t["status"] == "COMPLETED" for t in trials)
    assert all({"units", "num_heads", "pooling"} <= set(t["hyperparameters"]["values"])
               for t in trials)


def test_search_spaces_are_checked_against_the_constructor():
    """Every shipped space returns only its family's constructor arguments
    (checked when the spaces load), and a space that returns another key is
    an error naming its file, the key and the close matches."""
    assert {"mpsan", "cspan", "epn", "spe_cnn", "hcan", "hcan_flat"} <= set(tuning.searches())

    class Misspelt(tuning.ZooHyperModel):
        def space(self, hp):
            return {"num_head": hp.Int("num_head", 1, 4)}

    with pytest.raises(tuning.SearchSpaceError, match="'num_head'.*Did you mean: num_heads"):
        tuning.check_space("hcan", Misspelt)
    with pytest.raises(tuning.SearchSpaceError, match="unknown family"):
        tuning.check_space("no_such_family", Misspelt)


def test_hparams_domains_without_keras_tuner_internals():
    from tensorboard.plugins.hparams import api as hparams_api

    hp = keras_tuner.HyperParameters()
    hp.Choice("mask_set", ["bw,fw", "fa,fa"])
    hp.Int("num_blocks", 1, 7)
    hp.Int("units", 64, 256, step=64)
    hp.Float("dropout", 0.0, 0.2, step=0.1)
    hp.Float("learning_rate", 1e-4, 1e-2, sampling="log")
    hp.Boolean("residual")
    hp.Fixed("kernel_size", 3)
    domains = {h.name: tuning.hparams_domain(h, hparams_api) for h in hp.space}
    assert domains["mask_set"].values == ["bw,fw", "fa,fa"]
    assert (domains["num_blocks"].min_value, domains["num_blocks"].max_value) == (1, 7)
    assert domains["units"].values == [64, 128, 192, 256]
    assert domains["dropout"].values == pytest.approx([0.0, 0.1, 0.2])
    assert (domains["learning_rate"].min_value, domains["learning_rate"].max_value) == (1e-4, 1e-2)
    assert domains["residual"].values == [False, True]
    assert domains["kernel_size"].values == [3]
