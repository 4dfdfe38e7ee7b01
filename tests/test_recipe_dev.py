"""benchmarks/recipe_dev.py: dev-only runs through the trainer's ``fit``; with
``--work-dir`` an interrupted invocation resumes where it stopped, training as
the uninterrupted one would, and a finished run is not trained again."""

import json
import os
import signal

import keras
import pytest
import recipe_dev
from test_reproduce import write_sets
from test_run import _EpochCount

from keras_posattn.training.run_folder import RunFolder

CANDIDATE = ('--candidate=small=paper:{"config": {"embedding_dim": 8, "dropout": 0.5}, '
             '"recipe": {"epochs": 3, "embeddings": "none"}}')


class _CtrlCInFit(keras.callbacks.Callback):
    """Ctrl-C (SIGINT to this process) after the first batch of ``epoch`` of
    the ``fit``-th training run this callback sees."""

    def __init__(self, fit, epoch):
        super().__init__()
        self.fit, self.epoch, self.fits, self.current = fit, epoch, 0, None

    def on_train_begin(self, logs=None):
        self.fits += 1

    def on_epoch_begin(self, epoch, logs=None):
        self.current = epoch

    def on_train_batch_end(self, batch, logs=None):
        if (self.fits, self.current, batch) == (self.fit, self.epoch, 0):
            os.kill(os.getpid(), signal.SIGINT)


def printed(capsys, benchmark="recipe_dev"):
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()
             if line.startswith("{")]
    return [line for line in lines if line["benchmark"] == benchmark]


def without_time(run):
    return {k: v for k, v in run.items() if k not in ("seconds", "resumed_after_epoch")}


@pytest.fixture
def args(tmp_path):
    data = write_sets(tmp_path / "data")
    return ["kim_cnn_static", "--dataset", "trec", "--data-dir", str(data),
            "--seeds", "1234", "1235", CANDIDATE]


def test_an_interrupted_invocation_resumes_and_keeps_its_finished_runs(tmp_path, args, capsys,
                                                                      monkeypatch):
    assert recipe_dev.main(args) == 0  # each run in a temporary folder
    straight = printed(capsys)
    assert [(r["seed"], r["epochs_run"]) for r in straight] == [(1234, 3), (1235, 3)]
    assert all(r["train_size"] == 108 and r["dev_size"] == 12 for r in straight)

    work = ["--work-dir", str(tmp_path / "work")]
    with pytest.raises(KeyboardInterrupt):
        recipe_dev.main(args + work, callbacks=[_CtrlCInFit(fit=2, epoch=1)])
    first = printed(capsys)  # seed 1234 finished, seed 1235 stopped in its epoch 2
    assert [without_time(r) for r in first] == [without_time(straight[0])]
    folder = tmp_path / "work" / "kim_cnn_static-trec-small-1235"
    assert RunFolder(folder).resumed_epoch() == 1
    assert (tmp_path / "work" / "kim_cnn_static-trec-small-1234" / "record.json").exists()

    fits = []
    real_fit = recipe_dev.trainer.fit
    monkeypatch.setattr(recipe_dev.trainer, "fit",
                        lambda *a, **k: fits.append(k["resume"]) or real_fit(*a, **k))
    assert recipe_dev.main(args + work) == 0
    out = capsys.readouterr().out.splitlines()
    second = [json.loads(line) for line in out if line.startswith("{")]
    # Only the resumed run trains, and prints its line; it is the straight run's.
    assert fits == [True]
    assert [r["benchmark"] for r in second] == ["recipe_dev", "recipe_dev_summary"]
    assert second[0]["resumed_after_epoch"] == 1
    assert without_time(second[0]) == without_time(straight[1])
    assert second[1]["runs"] == 2
    assert second[1]["mean"] == pytest.approx(
        round(sum(r["dev_accuracy"] for r in straight) / 2, 4))

    # Everything finished: nothing trains, no run line repeats.
    assert recipe_dev.main(args + work) == 0
    assert fits == [True] and printed(capsys) == []


def test_a_run_cut_short_before_its_record_is_not_trained_again(tmp_path, args, capsys,
                                                                 monkeypatch):
    """Killed after training, before ``record.json`` is written, a run
    resumes from its trained weights: no epoch trains again and it prints the
    line the killed invocation would have; once recorded, the weights go."""
    args = args[:args.index("--seeds")] + ["--seeds", "1234", CANDIDATE,
                                           "--work-dir", str(tmp_path / "work")]
    real_write, lost = recipe_dev._write_json, []

    def killed_before_the_record(path, value):
        if path.name != "record.json":  # unit.json
            return real_write(path, value)
        lost.append(value)
        raise KeyboardInterrupt("killed before the record")

    monkeypatch.setattr(recipe_dev, "_write_json", killed_before_the_record)
    with pytest.raises(KeyboardInterrupt):
        recipe_dev.main(args)
    assert printed(capsys) == []
    folder = RunFolder(tmp_path / "work" / "kim_cnn_static-trec-small-1234")
    assert folder.trained.exists() and not folder.backup.exists()
    assert folder.resumed_epoch() == 3

    monkeypatch.setattr(recipe_dev, "_write_json", real_write)
    count = _EpochCount()
    assert recipe_dev.main(args, callbacks=[count]) == 0
    (run,) = printed(capsys)
    assert count.epochs == 0 and run["resumed_after_epoch"] == 3
    assert without_time(run) == without_time(lost[0])
    assert (folder.path / "record.json").exists() and not folder.trained.exists()


def test_a_work_folder_of_another_run_is_refused(tmp_path):
    unit = {"model": "hcan_flat", "dataset": "imdb", "fold": None, "candidate": "glove",
            "seed": 1234, "max_train": 5000, "recipe": {}}
    folder = recipe_dev.run_folder(tmp_path, unit)
    assert folder.name == "hcan_flat-imdb-glove-1234-train5000"
    assert recipe_dev.run_folder(tmp_path, dict(unit)) == folder
    with pytest.raises(SystemExit, match=r"hcan_flat-imdb-glove-1234-train5000 holds another "
                                         r"run \(recipe.learning_rate differ: \{'recipe."
                                         r"learning_rate': None\} there, \{'recipe."
                                         r"learning_rate': 0.01\} now"):
        recipe_dev.run_folder(tmp_path, unit | {"recipe": {"learning_rate": 0.01}})


def test_a_candidate_resolving_to_other_settings_is_refused(tmp_path, args, capsys,
                                                           monkeypatch):
    """``glove=50d`` means other vectors once a preset's default changes: the
    folder of the old meaning is not resumed or counted as the new one."""
    work = ["--work-dir", str(tmp_path / "work"), "--seeds", "1234"]
    args = args[:args.index("--seeds")] + [CANDIDATE]
    assert recipe_dev.main(args + work) == 0
    (run,) = printed(capsys)
    unit = json.loads((tmp_path / "work" / "kim_cnn_static-trec-small-1234" / "unit.json")
                      .read_text())
    assert unit["resolved"]["recipe"] == run["recipe"]
    assert unit["resolved"]["recipe"]["embeddings"] == "none"
    assert unit["resolved"]["config"]["embedding_dim"] == 8

    real = recipe_dev.candidate_settings

    def default_changed(*a):  # as if the preset's 50d table now had another rate
        settings = real(*a)
        settings.recipe = settings.recipe.replace(learning_rate=0.5)
        return settings

    monkeypatch.setattr(recipe_dev, "candidate_settings", default_changed)
    with pytest.raises(SystemExit, match=r"holds another run \(resolved.recipe.learning_rate "
                                         r"differ"):
        recipe_dev.main(args + work)


def _older_folder(tmp_path, unit, record=None):
    """A folder as recipe_dev.py wrote it before units recorded ``resolved``."""
    folder = recipe_dev.run_folder(tmp_path, {k: v for k, v in unit.items() if k != "resolved"})
    if record is not None:
        (folder / "record.json").write_text(json.dumps({"dev_accuracy": 0.9, "recipe": record}))
    return folder


def test_older_folders_are_checked_against_what_they_hold(tmp_path, capsys):
    unit = {"model": "hcan_flat", "dataset": "imdb", "fold": None, "candidate": "glove",
            "seed": 1234, "max_train": 5000, "config": {}, "recipe": {},
            "resolved": {"config": {"dropout": 0.5},
                         "recipe": {"epochs": 30, "embeddings": "glove-6b-50d"}}}
    # Finished under the same recipe: taken, and its unit.json brought up to date.
    folder = _older_folder(tmp_path / "a", unit, {"epochs": 30, "embeddings": "glove-6b-50d"})
    assert recipe_dev.run_folder(tmp_path / "a", unit) == folder
    assert json.loads((folder / "unit.json").read_text()) == unit
    assert recipe_dev.run_folder(tmp_path / "a", unit) == folder

    # Finished under other vectors (the candidate's meaning changed since): refused.
    _older_folder(tmp_path / "b", unit, {"epochs": 30, "embeddings": "domain+glove-6b-50d"})
    with pytest.raises(SystemExit, match=r"holds another run \(resolved.recipe.embeddings "
                                         r"differ: \{'resolved.recipe.embeddings': "
                                         r"'domain\+glove-6b-50d'\} there, \{'resolved.recipe."
                                         r"embeddings': 'glove-6b-50d'\} now"):
        recipe_dev.run_folder(tmp_path / "b", unit)

    # Another candidate's overrides: refused before anything else is read.
    _older_folder(tmp_path / "c", unit | {"recipe": {"learning_rate": 0.01}})
    with pytest.raises(SystemExit, match=r"\(recipe.learning_rate differ"):
        recipe_dev.run_folder(tmp_path / "c", unit)

    # Unfinished: nothing says what it trained on, so it resumes with a warning.
    folder = _older_folder(tmp_path / "d", unit)
    capsys.readouterr()
    assert recipe_dev.run_folder(tmp_path / "d", unit) == folder
    assert "cannot be checked" in capsys.readouterr().err
    assert json.loads((folder / "unit.json").read_text()) == unit


def test_max_train_trains_on_a_seeded_sample(tmp_path, args, capsys):
    args = args[:args.index("--seeds")] + ["--seeds", "1234", CANDIDATE, "--max-train", "40",
                                           "--work-dir", str(tmp_path / "work")]
    assert recipe_dev.main(args) == 0
    (run,) = printed(capsys)
    assert run["train_size"] == 40 and run["dev_size"] == 12 and run["epochs_run"] == 3
    record = tmp_path / "work" / "kim_cnn_static-trec-small-1234-train40" / "record.json"
    assert json.loads(record.read_text()) == run
    assert run["deterministic"] is recipe_dev.trainer.op_determinism() is False

    # --deterministic: TensorFlow's deterministic kernels for the rest of the
    # process, in the record, and a run of its own (the folder above is not it).
    try:
        with pytest.raises(SystemExit, match=r"holds another run \(deterministic differ"):
            recipe_dev.main(args + ["--deterministic"])
        assert recipe_dev.trainer.op_determinism() is True
        work = ["--work-dir", str(tmp_path / "work2")]
        assert recipe_dev.main(args[:-2] + work + ["--deterministic"]) == 0
        (run,) = printed(capsys)
        assert run["deterministic"] is True and run["train_size"] == 40
    finally:
        recipe_dev.trainer.set_op_determinism(False)
