"""benchmarks/imdb_dev_gap.py: its held-out sets are what its BENCHMARKS
section says they are, and a malformed line names the file and line."""

import json

import imdb_dev_gap
import numpy as np
import pytest


def rows(per_label=450):
    return [(label, id_, f"review {label} {id_}") for label in (0, 1) for id_ in range(per_label)]


def test_held_out_sets_have_the_size_and_the_blocks_asked_for():
    data = rows()
    random_dev, block_dev = imdb_dev_gap.held_out(data, seed=3, size=200, block=50)
    assert len(random_dev) == len(set(random_dev.tolist())) == 200
    assert len(block_dev) == len(set(block_dev.tolist())) == 200
    # Four whole runs of 50 consecutive ids of one label each.
    runs = {(data[i][0], data[i][1] // 50) for i in block_dev}
    assert len(runs) == 4
    for label, run in runs:
        assert {data[i][1] for i in block_dev if data[i][0] == label and data[i][1] // 50 == run} \
            == set(range(50 * run, 50 * run + 50))
    # The random set is spread over many runs; the draw follows the seed.
    assert len({(data[i][0], data[i][1] // 50) for i in random_dev}) > 10
    again = imdb_dev_gap.held_out(data, seed=3, size=200, block=50)
    assert np.array_equal(again[0], random_dev) and np.array_equal(again[1], block_dev)


def test_neighbours_finds_consecutive_reviews_alike():
    # Runs of 5 consecutive ids share a "film" word; random pairs rarely do.
    rng = np.random.default_rng(0)
    data = [(label, id_, f"film{label}_{id_ // 5} " + " ".join(rng.choice(
        [f"w{k}" for k in range(300)], size=6))) for label in (0, 1) for id_ in range(400)]
    out = imdb_dev_gap.neighbours(data, seed=1, pairs=300)
    assert out["adjacent_mean_cosine"] > 2 * out["random_mean_cosine"]
    assert out["adjacent_above_random_p99"] > 0.5


def test_a_malformed_line_names_file_and_line(tmp_path):
    folder = tmp_path / "imdb"
    folder.mkdir()
    good = json.dumps({"label": 1, "id": 0, "rating": 9, "text": "fine"})
    (folder / "train.jsonl").write_text(good + "\n" + '{"label": 1, "text": "no id"}\n')
    with pytest.raises(SystemExit, match=r"train\.jsonl:2: not an IMDB review line"):
        imdb_dev_gap.read_imdb_train(str(tmp_path))
