"""benchmarks/dev_calibration.py: per-epoch dev readings that tell a shifted
decision from a lost ranking, checked against brute force and on a real run."""

import itertools
import json

import dev_calibration
import numpy as np
import pytest
from test_reproduce import write_sets


def brute_auc(margins, labels):
    pairs = [(p, n) for p, n in itertools.product(
        [m for m, y in zip(margins, labels) if y], [m for m, y in zip(margins, labels) if not y])]
    return sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in pairs) / len(pairs)


def test_auc_matches_the_pairwise_count_with_ties():
    rng = np.random.default_rng(0)
    margins = rng.integers(-3, 4, size=60).astype(float)  # many ties
    labels = rng.integers(0, 2, size=60)
    auc, _ = dev_calibration.ranking_scores(margins, labels)
    assert auc == pytest.approx(brute_auc(margins, labels))


def test_a_shifted_decision_keeps_the_ranking_and_moves_the_shares():
    labels = np.array([0, 0, 0, 1, 1, 1])
    logits = np.stack([np.zeros(6), np.array([-3.0, -2.0, -1.0, 1.0, 2.0, 3.0])], axis=1)
    right = dev_calibration.epoch_scores(logits, labels, 2)
    shifted = dev_calibration.epoch_scores(logits + [0.0, 3.5], labels, 2)  # bias to class 1
    assert right["accuracy"] == 1.0 and right["predicted_shares"] == [0.5, 0.5]
    assert shifted["accuracy"] == 0.5 and shifted["predicted_shares"] == [0.0, 1.0]
    assert right["auc"] == shifted["auc"] == 1.0
    assert right["prior_matched"] == shifted["prior_matched"] == 1.0
    assert shifted["true_shares"] == [0.5, 0.5]


def test_a_lost_ranking_reads_lower_and_one_class_has_none():
    labels = np.array([0, 1, 0, 1])
    logits = np.stack([np.zeros(4), np.array([2.0, -2.0, 1.0, -1.0])], axis=1)  # reversed
    scores = dev_calibration.epoch_scores(logits, labels, 2)
    assert scores["auc"] == 0.0 and scores["prior_matched"] == 0.0
    three = dev_calibration.epoch_scores(np.eye(3)[[0, 1, 2]], np.array([0, 1, 2]), 3)
    assert three["auc"] is None and three["prior_matched"] is None and three["accuracy"] == 1.0


def test_a_run_prints_each_epoch_with_the_dev_accuracy_keras_measured(tmp_path, capsys):
    data = write_sets(tmp_path / "data")
    assert dev_calibration.main([
        "kim_cnn_static", "--dataset", "mr", "--fold", "0", "--data-dir", str(data),
        '--candidate=small=paper:{"config": {"embedding_dim": 8}, '
        '"recipe": {"epochs": 2, "embeddings": "none"}}']) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()
             if line.startswith("{")]
    epochs = [line for line in lines if line["benchmark"] == "dev_calibration"]
    (run,) = [line for line in lines if line["benchmark"] == "recipe_dev"]
    assert [e["epoch"] for e in epochs] == [1, 2]
    # the callback's own predictions score what Keras' validation measured
    assert [e["accuracy"] for e in epochs] == pytest.approx(run["val_accuracy"], abs=1e-4)
    assert all(sum(e["predicted_shares"]) == pytest.approx(1.0) for e in epochs)
    assert all(0.0 <= e["auc"] <= 1.0 for e in epochs)
