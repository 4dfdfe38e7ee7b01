"""`keras-posattn reproduce`: runs over seeds (and folds) through the trainer,
a JSON record and a TABLE.md row beside the paper and the peers, resumable."""

import json
import re

import numpy as np
import pytest

from keras_posattn import cli
from keras_posattn import reproduce as reproduce_lib
from keras_posattn.training import trainer

TINY = ["--set", "embedding_dim=8", "--embeddings", "none", "--epochs", "1", "--quiet"]


def write_sets(root, n=120, seed=0):
    """A TREC-layout set (two classes decided by one word) and an MR-layout
    (cross-validated) one, small."""
    rng = np.random.default_rng(seed)
    filler = [f"w{i}" for i in range(30)]

    def rows(count):
        out = []
        for _ in range(count):
            label = int(rng.integers(0, 2))
            words = list(rng.choice(filler, size=6)) + [("good", "bad")[label]]
            out.append(f"{label}\t{' '.join(words)}\n")
        return "".join(out)

    (root / "trec").mkdir(parents=True)
    (root / "trec/train.tsv").write_text(rows(n))
    (root / "trec/test.tsv").write_text(rows(40))
    (root / "trec/labels.txt").write_text("0\tPOS\n1\tNEG\n")
    (root / "mr").mkdir()
    (root / "mr/all.tsv").write_text(rows(200))
    (root / "mr/labels.txt").write_text("0\tpos\n1\tneg\n")
    return root


@pytest.fixture
def counted(monkeypatch):
    calls = []
    real = trainer.train

    def train(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(trainer, "train", train)
    return calls


def run(tmp_path, *extra, tiny=TINY):
    data = tmp_path / "data"
    if not data.exists():
        write_sets(data)
    return cli.main(["reproduce", "kim_cnn_static", "--data-dir", str(data),
                     "--results-dir", str(tmp_path / "results"), *tiny, *extra])


def test_runs_record_table_and_resume(tmp_path, counted):
    assert run(tmp_path, "--dataset", "trec", "--runs", "2") == 0
    # No --recipe: the trainer's pick for kim_cnn_static (no 50d table) names the file.
    path = tmp_path / "results/kim_cnn_static-trec-paper.json"
    record = json.loads(path.read_text())
    assert record["recipe"] == "paper" and record["recipe_used"] == "paper"
    assert sorted(record["units"]) == ["run0", "run1"]
    assert [u["seed"] for u in record["units"].values()] == [1234, 1235]
    assert all(u["epochs"] == 1 and u["seconds"] > 0 for u in record["units"].values())
    from keras_posattn.utils import machine
    assert all(u["machine"] == machine() for u in record["units"].values())
    accuracies = [u["accuracy"] for u in record["units"].values()]
    summary = record["summary"]
    assert summary["runs_finished"] == 2
    assert summary["per_run_accuracy"] == accuracies
    assert summary["mean"] == pytest.approx(np.mean(accuracies))
    assert summary["std"] == pytest.approx(np.std(accuracies, ddof=1))
    assert summary["best"] == max(accuracies)
    assert record["paper"] == 90.84  # kim_cnn_static's reported TREC number
    assert summary["gap_to_paper"] == pytest.approx(100 * summary["mean"] - 90.84)
    # The peers on each run's own split, with its seed; one word decides the label.
    assert sorted(record["peers"]) == ["run0", "run1"]
    assert all(p["tfidf_lr"] >= 0.9 for p in record["peers"].values())
    assert summary["peers"]["tfidf_lr"] == pytest.approx(
        np.mean([p["tfidf_lr"] for p in record["peers"].values()]))
    assert 0.0 <= summary["peers"]["fasttext"] <= 1.0
    assert record["vectors"] is None  # --embeddings none
    assert record["versions"]["tensorflow"] and record["versions"]["scikit-learn"]
    assert record["command"].startswith("keras-posattn ")
    assert record["settings"]["train_kwargs"] == {"embeddings": "none",
                                                  "overrides": {"embedding_dim": 8}}
    table = (tmp_path / "results/TABLE.md").read_text().splitlines()
    assert len(table) == 3 and table[2].startswith("| `kim_cnn_static` | trec | paper | none |")
    cells = [c.strip() for c in table[2].split("|")[1:-1]]
    assert cells[4] == f"{100 * summary['mean']:.2f} ± {100 * summary['std']:.2f} (2)"
    assert cells[6] == "90.84" and cells[8] == f"{100 * summary['peers']['tfidf_lr']:.2f}"
    assert len(counted) == 2 and all(c["export"] is False for c in counted)
    assert [c["output_dir"].name for c in counted] == ["run0", "run1"]
    assert all(c["recipe"] == "paper" and c["epochs"] == 1 for c in counted)

    # Again: nothing left to train; the table keeps one row.
    assert run(tmp_path, "--dataset", "trec", "--runs", "2") == 0
    assert len(counted) == 2
    assert len((tmp_path / "results/TABLE.md").read_text().splitlines()) == 3

    # A half-finished record (a unit missing) trains only that unit; a unit
    # whose folder holds a checkpoint is resumed, not started over.
    record = json.loads(path.read_text())
    del record["units"]["run1"]
    path.write_text(json.dumps(record))
    (counted[-1]["output_dir"] / "backup").mkdir()
    assert run(tmp_path, "--dataset", "trec", "--runs", "2") == 0
    assert len(counted) == 3 and counted[-1]["seed"] == 1235
    assert counted[-1]["resume"] is True and counted[-1]["overwrite"] is False
    record = json.loads(path.read_text())
    assert sorted(record["units"]) == ["run0", "run1"] and record["units"]["run1"]["resumed"]
    assert record["summary"]["runs_finished"] == 2

    # More runs extend the record: only the new run trains.
    assert run(tmp_path, "--dataset", "trec", "--runs", "3") == 0
    assert len(counted) == 4 and counted[-1]["seed"] == 1236
    assert json.loads(path.read_text())["summary"]["runs_finished"] == 3


def test_cross_validated_set_runs_each_fold(tmp_path, counted, capsys):
    tiny = [t for t in TINY if t != "--quiet"]
    assert run(tmp_path, "--dataset", "mr", "--runs", "1", "--folds", "2", "--no-peers",
               tiny=tiny) == 0
    # A progress line per unit on stderr, with the time left.
    err = capsys.readouterr().err
    first = r"^\[1/2\] run 0 fold 0: 0\.\d{4} \(\d+ s, ETA \d+ (s|min)\)$"
    assert re.search(first, err, re.MULTILINE), err
    assert re.search(r"^\[2/2\] run 0 fold 1: 0\.\d{4} \(\d+ s, ETA 0 s\)$", err,
                     re.MULTILINE), err
    record = json.loads((tmp_path / "results/kim_cnn_static-mr-paper.json").read_text())
    assert sorted(record["units"]) == ["run0-fold0", "run0-fold1"]
    assert [c["fold"] for c in counted] == [0, 1]
    folds = [u["accuracy"] for u in record["units"].values()]
    assert record["summary"]["per_run_accuracy"] == [pytest.approx(np.mean(folds))]
    assert record["paper"] == 79.38
    assert record["peers"] == {}
    assert "(1, 2 folds)" in (tmp_path / "results/TABLE.md").read_text()


@pytest.mark.slow  # test_cross_validated_set_runs_each_fold checks the same lines
def test_progress_lines_on_stderr(tmp_path, capsys):
    tiny = [t for t in TINY if t != "--quiet"]
    assert run(tmp_path, "--dataset", "trec", "--runs", "2", "--no-peers", tiny=tiny) == 0
    err = capsys.readouterr().err
    first = r"^\[1/2\] run 0: 0\.\d{4} \(\d+ s, ETA \d+ (s|min)\)$"
    assert re.search(first, err, re.MULTILINE), err
    assert re.search(r"^\[2/2\] run 1: 0\.\d{4} \(\d+ s, ETA 0 s\)$", err, re.MULTILINE), err


def test_other_settings_do_not_mix_with_a_record(tmp_path, capsys):
    assert run(tmp_path, "--dataset", "trec", "--runs", "1", "--no-peers") == 0
    capsys.readouterr()
    assert run(tmp_path, "--dataset", "trec", "--runs", "1", "--no-peers", "--seed", "7") == 2
    assert "other settings" in capsys.readouterr().err
    record = json.loads((tmp_path / "results/kim_cnn_static-trec-paper.json").read_text())
    assert record["units"]["run0"]["deterministic"] is False
    # Deterministic kernels make other runs: a record of their own, which says so.
    assert run(tmp_path, "--dataset", "trec", "--runs", "1", "--no-peers",
               "--deterministic") == 2
    assert "other settings" in capsys.readouterr().err
    assert run(tmp_path / "det", "--dataset", "trec", "--runs", "1", "--no-peers",
               "--deterministic") == 0
    record = json.loads((tmp_path / "det/results/kim_cnn_static-trec-paper.json").read_text())
    assert record["settings"]["train_kwargs"]["deterministic"] is True
    assert record["units"]["run0"]["deterministic"] is True
    assert trainer.op_determinism() is False  # the run turned them off again


def test_a_record_pins_the_presets_resolved_config_and_recipe(tmp_path, capsys, monkeypatch):
    from keras_posattn import registry

    assert run(tmp_path, "--dataset", "trec", "--runs", "1", "--no-peers") == 0
    path = tmp_path / "results/kim_cnn_static-trec-paper.json"
    record = json.loads(path.read_text())
    preset = registry.get_preset("kim_cnn_static")
    resolved = record["resolved"]
    # The preset's config with --set applied, and its recipe with --epochs and
    # the vectors --embeddings gave the runs, not the recipe's.
    assert resolved["config"] == {**preset["config"], "embedding_dim": 8}
    from keras_posattn.training.recipe import Recipe
    recipe = Recipe.from_dict(preset["recipe"]).replace(epochs=1).as_dict()
    assert recipe["embeddings"] not in (None, "none") and recipe["epochs"] == 1
    assert resolved["recipe"] == json.loads(json.dumps({**recipe, "embeddings": "none"}))
    assert "resolved_unchecked_units" not in record
    capsys.readouterr()

    # The zoo's recipe edited between two calls: the record refuses to grow,
    # naming what changed, and trains nothing.
    edited = {name: dict(table) for name, table in registry._raw_presets().items()}
    old_dropout = preset["config"]["dropout"]
    edited["kim_cnn_static"]["config"] = {**preset["config"], "dropout": old_dropout + 0.25}
    monkeypatch.setattr(registry, "_raw_presets", lambda: edited)
    assert run(tmp_path, "--dataset", "trec", "--runs", "2", "--no-peers") == 2
    err = capsys.readouterr().err
    assert "another config or recipe" in err
    assert f"config.dropout: {old_dropout} -> {old_dropout + 0.25}" in err
    assert json.loads(path.read_text())["units"].keys() == {"run0"}
    monkeypatch.undo()

    # A record from before records pinned them: grows, pinned from now on,
    # and lists the units it could not check.
    del record["resolved"]
    path.write_text(json.dumps(record))
    assert run(tmp_path, "--dataset", "trec", "--runs", "2", "--no-peers") == 0
    assert "cannot be checked" in capsys.readouterr().err
    record = json.loads(path.read_text())
    assert record["resolved"] == resolved and record["resolved_unchecked_units"] == ["run0"]
    assert sorted(record["units"]) == ["run0", "run1"]


def test_a_new_record_names_the_same_run_under_another_recipe(tmp_path, capsys):
    # kim_cnn_nonstatic's 50d recipe is its paper recipe with other vectors:
    # a default whose recipe name changed once, so its old records are "paper".
    write_sets(tmp_path / "data")

    def kim(*extra):
        return cli.main(["reproduce", "kim_cnn_nonstatic", "--data-dir", str(tmp_path / "data"),
                         "--results-dir", str(tmp_path / "results"), "--dataset", "trec",
                         "--runs", "1", "--no-peers", *TINY, *extra])

    assert kim("--recipe", "paper") == 0
    assert "under the recipe" not in capsys.readouterr().err
    assert kim("--recipe", "50d") == 0
    err = capsys.readouterr().err
    old = tmp_path / "results/kim_cnn_nonstatic-trec-paper.json"
    new = tmp_path / "results/kim_cnn_nonstatic-trec-50d.json"
    assert (f"[reproduce] {old} holds 1 finished unit of kim_cnn_nonstatic on trec under the "
            f"recipe 'paper'; this run records under '50d' in {new} (--recipe paper with "
            "that record's settings continues it).") in err
    assert json.loads(new.read_text())["units"].keys() == {"run0"}
    # Resuming the new record says nothing more.
    assert kim("--recipe", "50d") == 0
    assert "under the recipe" not in capsys.readouterr().err


def test_recipe_named_as_the_trainer_picks():
    assert reproduce_lib.resolve_recipe("mpsan") == "50d"  # a glove50d table, 50d vectors
    assert reproduce_lib.resolve_recipe("mpsan", embeddings="none") == "paper"
    assert reproduce_lib.resolve_recipe("mpsan", recipe="paper") == "paper"
    assert reproduce_lib.resolve_recipe("kim_cnn_static") == "paper"


def test_bad_names_are_one_line_errors(capsys):
    assert cli.main(["reproduce", "nosuch", "--dataset", "trec"]) == 2
    err = capsys.readouterr().err
    assert "Unknown model 'nosuch'" in err and len(err.strip().splitlines()) == 1
    assert cli.main(["reproduce", "spe_cnn", "--dataset", "treck"]) == 2
    err = capsys.readouterr().err
    assert "Unknown dataset 'treck'" in err and "Did you mean: trec" in err
    with pytest.raises(reproduce_lib.ReproduceError, match="cross-validated"):
        reproduce_lib.reproduce("spe_cnn", "trec", folds=2)
    with pytest.raises(reproduce_lib.ReproduceError, match="1..10"):
        reproduce_lib.reproduce("spe_cnn", "mr", folds=11)


def test_paper_numbers_are_only_those_of_the_same_set():
    """SPE-CNN's "Reuters" is a 10-class Reuters-21578 subset (its Table 1:
    6,472 / 720 / 2,787), not R8: an R8 row has no paper number to compare
    with; 20 Newsgroups (11,314 / 7,532 there and here) keeps its number."""
    assert reproduce_lib._paper_number("spe_cnn", "r8") is None
    assert reproduce_lib._paper_number("kim_cnn_nonstatic", "r8") is None
    assert reproduce_lib._paper_number("spe_cnn", "20ng") == pytest.approx(82.95)
    assert reproduce_lib._paper_number("spe_cnn", "trec") == pytest.approx(92.52)
