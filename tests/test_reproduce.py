"""`keras-posattn reproduce`: runs over seeds (and folds) through the trainer,
a JSON record and a TABLE.md row beside the paper and the peers, resumable."""

import json

import numpy as np
import pytest

from keras_posattn import cli
from keras_posattn import reproduce as reproduce_lib
from keras_posattn.training import trainer

TINY = ["--set", "embedding_dim=8", "--epochs", "1", "--quiet"]


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


def run(tmp_path, *extra):
    data = tmp_path / "data"
    if not data.exists():
        write_sets(data)
    return cli.main(["reproduce", "kim_cnn_static", "--data-dir", str(data),
                     "--results-dir", str(tmp_path / "results"), *TINY, *extra])


def test_runs_record_table_and_resume(tmp_path, counted):
    assert run(tmp_path, "--dataset", "trec", "--runs", "2") == 0
    record = json.loads((tmp_path / "results/kim_cnn_static-trec-default.json").read_text())
    assert sorted(record["units"]) == ["run0", "run1"]
    assert [u["seed"] for u in record["units"].values()] == [1234, 1235]
    accuracies = [u["accuracy"] for u in record["units"].values()]
    summary = record["summary"]
    assert summary["runs_finished"] == 2
    assert summary["mean"] == pytest.approx(np.mean(accuracies))
    assert summary["std"] == pytest.approx(np.std(accuracies, ddof=1))
    assert summary["best"] == max(accuracies)
    assert record["paper"] is not None  # kim_cnn_static reports TREC
    assert summary["gap_to_paper"] == pytest.approx(100 * summary["mean"] - record["paper"])
    assert summary["peers"]["tfidf_lr"] >= 0.9  # one word decides the label
    assert 0.0 <= summary["peers"]["fasttext"] <= 1.0
    assert record["vectors"] is not None and record["versions"]["tensorflow"]
    table = (tmp_path / "results/TABLE.md").read_text().splitlines()
    assert len(table) == 3 and table[2].startswith("| `kim_cnn_static` | trec | default |")
    assert len(counted) == 2 and all(c["export"] is False for c in counted)

    # Again: nothing left to train; the table keeps one row.
    assert run(tmp_path, "--dataset", "trec", "--runs", "2") == 0
    assert len(counted) == 2
    assert len((tmp_path / "results/TABLE.md").read_text().splitlines()) == 3

    # An interrupted reproduction (a unit missing from the record) trains only that unit.
    path = tmp_path / "results/kim_cnn_static-trec-default.json"
    record = json.loads(path.read_text())
    del record["units"]["run1"]
    path.write_text(json.dumps(record))
    assert run(tmp_path, "--dataset", "trec", "--runs", "2") == 0
    assert len(counted) == 3 and counted[-1]["seed"] == 1235


def test_cross_validated_set_runs_each_fold(tmp_path, counted):
    assert run(tmp_path, "--dataset", "mr", "--runs", "1", "--folds", "2", "--no-peers") == 0
    record = json.loads((tmp_path / "results/kim_cnn_static-mr-default.json").read_text())
    assert sorted(record["units"]) == ["run0-fold0", "run0-fold1"]
    assert [c["fold"] for c in counted] == [0, 1]
    folds = [u["accuracy"] for u in record["units"].values()]
    assert record["summary"]["per_run_accuracy"] == [pytest.approx(np.mean(folds))]
    assert record["peers"] == {}
    assert "2 folds" in (tmp_path / "results/TABLE.md").read_text()


def test_other_settings_do_not_mix_with_a_record(tmp_path):
    assert run(tmp_path, "--dataset", "trec", "--runs", "1", "--no-peers") == 0
    assert run(tmp_path, "--dataset", "trec", "--runs", "2", "--no-peers") == 2


def test_bad_names_are_one_line_errors(capsys):
    assert cli.main(["reproduce", "nosuch", "--dataset", "trec"]) == 2
    assert "Unknown model 'nosuch'" in capsys.readouterr().err
    assert cli.main(["reproduce", "spe_cnn", "--dataset", "nosuch"]) == 2
    assert "Unknown dataset 'nosuch'" in capsys.readouterr().err
    with pytest.raises(reproduce_lib.ReproduceError, match="cross-validated"):
        reproduce_lib.reproduce("spe_cnn", "trec", folds=2)
