"""benchmarks/transfer_table.py: the per-set table, its --patience reading
checked against the recipe's own Keras EarlyStopping, and its --epoch-window reading."""

import importlib.util
import json
import pathlib

import keras
import numpy as np
import pytest

from keras_posattn.training.recipe import Recipe

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "transfer_table.py"


@pytest.fixture(scope="module")
def tt():
    spec = importlib.util.spec_from_file_location("transfer_table", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def keras_early_stopping(curve, patience):
    """What the recipe's callback keeps and how long it trains, fed ``curve``."""
    callback = Recipe(epochs=len(curve), early_stopping=patience).selection_callback()
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.stop_training = False  # as fit() sets it before the first epoch
    callback.set_model(model)
    callback.on_train_begin()
    for epoch, value in enumerate(curve):
        callback.on_epoch_end(epoch, {"val_accuracy": value})
        if model.stop_training:
            return float(callback.best), epoch + 1
    return float(callback.best), len(curve)


CURVES = [
    [0.5032, 0.8576, 0.8744, 0.8828, 0.8332, 0.8812, 0.874, 0.8872, 0.8876],  # EPN IMDB
    [0.52, 0.7604, 0.8284, 0.8428, 0.6168, 0.8464, 0.8268, 0.8592, 0.8508, 0.8504, 0.7884],
    [0.7, 0.7, 0.7, 0.7],  # ties are not improvements
    [0.9, 0.1, 0.2, 0.95],
    [0.1, 0.2, 0.3, 0.4],
    [0.6],
]


@pytest.mark.parametrize("patience", [1, 2, 3])
@pytest.mark.parametrize("curve", CURVES)
def test_patience_reading_matches_keras_early_stopping(tt, curve, patience):
    assert tt.early_stopped(curve, patience) == keras_early_stopping(curve, patience)


def test_random_curves_match_keras(tt):
    rng = np.random.default_rng(0)
    for _ in range(30):
        curve = [round(float(v), 2) for v in rng.uniform(0.4, 0.9, rng.integers(1, 12))]
        patience = int(rng.integers(1, 5))
        assert tt.early_stopped(curve, patience) == keras_early_stopping(curve, patience)


def record(candidate, dataset, seed, curve, **recipe):
    return {"benchmark": "recipe_dev", "model": "epn", "dataset": dataset, "candidate": candidate,
            "seed": seed, "dev_accuracy": max(curve), "epochs_run": len(curve),
            "val_accuracy": curve, "recipe": {"epochs": len(curve), **recipe}}


def test_table_means_over_seeds_then_sets_and_reads_patience(tt, tmp_path, capsys, monkeypatch):
    runs = [
        record("a", "imdb", 1, [0.5, 0.8, 0.7, 0.6, 0.9]),
        record("a", "imdb", 2, [0.6, 0.7, 0.8]),
        record("a", "trec", 1, [0.9]),
        record("b", "imdb", 1, [0.85, 0.8, 0.8]),
        record("b", "trec", 1, [0.8, 0.95]),
    ]
    path = tmp_path / "runs.jsonl"
    path.write_text("Data: a log line\n" + "\n".join(json.dumps(r) for r in runs) + "\n")
    sets, rows = tt.table(tt.read_runs([path]))["epn"]
    assert sets == ["imdb", "trec"]
    by_name = {row[0]: row for row in rows}
    assert by_name["a"][1]["imdb"] == pytest.approx((0.85, 2))  # (0.9 + 0.8) / 2
    assert by_name["a"][2] == pytest.approx((0.85 + 0.9) / 2)
    assert by_name["b"][3] == pytest.approx(0.85)  # worst set
    assert [row[0] for row in rows] == ["b", "a"]  # 0.9 > 0.875

    patient = [tt.with_patience(r, 2) for r in runs]
    assert patient[0]["dev_accuracy"] == 0.8 and patient[0]["epochs_run"] == 4
    monkeypatch.setattr("sys.argv", ["transfer_table.py", str(path), "--patience", "2"])
    tt.main()
    out = capsys.readouterr().out
    assert "| `epn` candidate | imdb | trec | mean | worst | epochs trained (mean) |" in out
    assert "| a | 80.00 (2) | 90.00 (1) | 85.00 | 80.00 | 2.7 |" in out


def test_patience_refuses_a_curve_cut_by_a_smaller_patience(tt):
    run = record("a", "imdb", 1, [0.9, 0.8, 0.7], early_stopping=2)
    assert tt.with_patience(run, 2)["dev_accuracy"] == 0.9
    with pytest.raises(SystemExit, match="stopped on patience 2"):
        tt.with_patience(run, 3)


def test_epoch_window_scores_the_mean_over_the_window_not_the_best(tt, tmp_path, capsys,
                                                                   monkeypatch):
    swinging = record("a", "imdb", 1, [0.5, 0.9, 0.6, 0.9, 0.6])
    smooth = record("b", "imdb", 1, [0.5, 0.8, 0.8, 0.8, 0.7])
    assert tt.over_window(swinging, 2, 4)["dev_accuracy"] == pytest.approx(0.8)
    assert tt.over_window(smooth, 2, 4)["dev_accuracy"] == pytest.approx(0.8)
    assert tt.over_window(smooth, 1, 5)["dev_accuracy"] == pytest.approx(0.72)
    assert tt.over_window(smooth, 5, 5)["dev_accuracy"] == pytest.approx(0.7)
    with pytest.raises(SystemExit, match="has 5 epochs, not the 6"):
        tt.over_window(smooth, 2, 6)
    for bad in ("0-3", "4-2", "3", "a-b"):
        with pytest.raises(ValueError, match="--epoch-window"):
            tt.parse_window(bad)
    assert tt.parse_window("10-20") == (10, 20)

    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (swinging, smooth)) + "\n")
    monkeypatch.setattr("sys.argv", ["transfer_table.py", str(path), "--epoch-window", "3-5"])
    tt.main()
    out = capsys.readouterr().out
    assert "| b | 76.67 (1) | 76.67 | 76.67 |" in out  # best epoch: 0.9 against 0.8
    assert "| a | 70.00 (1) | 70.00 | 70.00 |" in out
    assert out.index("| b |") < out.index("| a |")
    monkeypatch.setattr("sys.argv", ["transfer_table.py", str(path), "--epoch-window", "1-9"])
    with pytest.raises(SystemExit, match="has 5 epochs"):
        tt.main()
