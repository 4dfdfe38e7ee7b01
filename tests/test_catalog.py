"""Datasets by name: layouts, encodings, folds, SST phrases, errors.

The layout tests write small files in the project's conventions; the last
ones read the real sets in ../shared/datasets when they are there.
"""

import json
import os
from pathlib import Path

import numpy as np
import pytest

from keras_posattn.datasets import catalog
from keras_posattn.datasets.readers import DataFormatError

DATA = Path(os.environ.get("KERAS_POSATTN_DATA",
                           Path(__file__).resolve().parents[2] / "shared" / "datasets"))
needs_data = pytest.mark.skipif(not (DATA / "trec").is_dir(),
                                reason=f"shared datasets not found at {DATA}")


def write(path, text, encoding="utf-8"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode(encoding))
    return path


# --- layouts ------------------------------------------------------------------------


def test_prepared_tsv_with_label_names_and_held_out_dev(tmp_path):
    rows = "".join(f"{i % 2}\tquestion number {i}\n" for i in range(50))
    write(tmp_path / "trec/train.tsv", rows)
    write(tmp_path / "trec/test.tsv", "1\twhat is it ?\n0\thow so ?\n")
    write(tmp_path / "trec/labels.txt", "0\tDESC\n1\tENTY\n")
    splits = catalog.load_dataset("trec", tmp_path)
    assert splits.label_names == ["DESC", "ENTY"]
    assert (len(splits.train), len(splits.dev), len(splits.test)) == (45, 5, 2)
    assert splits.test.texts == ["what is it ?", "how so ?"]
    assert splits.test.labels.tolist() == [1, 0]
    assert splits.name == "trec" and splits.fold is None
    # the held-out dev split is seeded and disjoint from train
    again = catalog.load_dataset("trec", tmp_path)
    assert again.dev.texts == splits.dev.texts
    assert not set(splits.dev.texts) & set(splits.train.texts)
    other = catalog.load_dataset("trec", tmp_path, seed=7)
    assert other.dev.texts != splits.dev.texts


def test_original_files_when_prepared_ones_are_absent(tmp_path):
    """orig/ ``label text`` lines in cp1252 (byte 0x85 is an ellipsis there)."""
    texts = ["a caf\u00e9 film", "so-so\u2026really", "bad", "good"]
    lines = "".join(f"{i % 2} {t} \n" for i, t in enumerate(texts))
    write(tmp_path / "sst5/orig/stsa.fine.train", lines, encoding="cp1252")
    write(tmp_path / "sst5/orig/stsa.fine.dev", "0 meh\n", encoding="cp1252")
    write(tmp_path / "sst5/orig/stsa.fine.test", "1 fine\n\n", encoding="cp1252")
    splits = catalog.load_dataset("sst5", tmp_path)
    assert splits.train.texts == texts
    assert splits.train.labels.tolist() == [0, 1, 0, 1]
    assert splits.dev.texts == ["meh"] and splits.test.texts == ["fine"]


def test_next_line_character_does_not_split_a_line(tmp_path):
    write(tmp_path / "trec/train.tsv", "0\tone\u0085two\n1\tthree\n" * 5)
    write(tmp_path / "trec/test.tsv", "0\tfour\u0085five\n")
    splits = catalog.load_dataset("trec", tmp_path)
    assert splits.test.texts == ["four\u0085five"]
    assert len(splits.train) + len(splits.dev) == 10


def test_malformed_original_line_names_file_and_line(tmp_path):
    write(tmp_path / "trec/orig/TREC.train.all", "0 fine question\n1\n")
    write(tmp_path / "trec/orig/TREC.test.all", "0 x\n")
    with pytest.raises(DataFormatError) as info:
        catalog.load_dataset("trec", tmp_path)
    assert "TREC.train.all" in str(info.value) and ":2" in str(info.value)


def test_fine_labels_take_names_from_every_split(tmp_path):
    write(tmp_path / "trec/train_fine.tsv", "DESC:manner\thow ?\nHUM:ind\twho ?\n" * 10)
    write(tmp_path / "trec/test_fine.tsv", "LOC:city\twhere ?\nHUM:ind\twho ?\n")
    write(tmp_path / "trec/labels.txt", "0\tDESC\n1\tHUM\n")  # coarse: not used
    splits = catalog.load_dataset("trec_fine", tmp_path)
    assert splits.label_names == ["DESC:manner", "HUM:ind", "LOC:city"]
    assert splits.test.labels.tolist() == [2, 1]


def test_unknown_label_in_test_is_a_one_line_error(tmp_path):
    write(tmp_path / "r8/../reuters/r8/train.tsv", "0\ta\n1\tb\n" * 5)
    write(tmp_path / "reuters/r8/test.tsv", "7\tc\n")
    write(tmp_path / "reuters/r8/labels.txt", "acq\nearn\n")
    with pytest.raises(catalog.DatasetError, match="'r8', test split: unknown label '7'"):
        catalog.load_dataset("r8", tmp_path)


def test_jsonl_imdb(tmp_path):
    rows = [{"label": i % 2, "id": i, "rating": 3, "text": f"review {i}<br />ok"} for i in range(20)]
    write(tmp_path / "imdb/train.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    write(tmp_path / "imdb/test.jsonl", json.dumps(rows[0]) + "\n")
    write(tmp_path / "imdb/labels.txt", "neg\npos\n")
    splits = catalog.load_dataset("imdb", tmp_path)
    assert splits.label_names == ["neg", "pos"]
    assert len(splits.train) + len(splits.dev) == 20
    assert splits.test.texts == ["review 0<br />ok"]


def test_zhang_csv_quoted_comma_escaped_newline_and_classes(tmp_path):
    csv_text = ('"3","Wall St. Bears","Short-sellers, Wall Street\'s \\ndwindling band"\n'
                '"1","Title","body"\n') * 10
    write(tmp_path / "ag_news/train.csv", csv_text)
    write(tmp_path / "ag_news/test.csv", '"4","Sci, Tech","A ""quoted"" word"\n')
    write(tmp_path / "ag_news/classes.txt", "World\nSports\nBusiness\nSci/Tech\n")
    splits = catalog.load_dataset("ag_news", tmp_path)
    assert splits.label_names == ["World", "Sports", "Business", "Sci/Tech"]
    assert splits.test.texts == ['Sci, Tech A "quoted" word']
    assert splits.test.labels.tolist() == [3]
    every = splits.train.texts + splits.dev.texts
    assert "Wall St. Bears Short-sellers, Wall Street's  dwindling band" in every
    assert sorted(set(np.concatenate([splits.train.labels, splits.dev.labels]).tolist())) == [0, 2]


def test_zhang_csv_malformed_row(tmp_path):
    write(tmp_path / "ag_news/train.csv", '"1","a","b"\n"x","c","d"\n')
    write(tmp_path / "ag_news/test.csv", '"1","a","b"\n')
    with pytest.raises(DataFormatError) as info:
        catalog.load_dataset("ag_news", tmp_path)
    assert "train.csv" in str(info.value) and ":2" in str(info.value)


def test_zhang_class_beyond_classes_txt(tmp_path):
    write(tmp_path / "ag_news/train.csv", '"1","a","b"\n"5","c","d"\n')
    write(tmp_path / "ag_news/test.csv", '"1","a","b"\n')
    write(tmp_path / "ag_news/classes.txt", "A\nB\n")
    with pytest.raises(catalog.DatasetError, match="class 5 but classes.txt names 2"):
        catalog.load_dataset("ag_news", tmp_path)


# --- errors --------------------------------------------------------------------------


def test_unknown_name_suggests_and_lists(tmp_path):
    with pytest.raises(catalog.DatasetError) as info:
        catalog.load_dataset("trek", tmp_path)
    message = str(info.value)
    assert "Did you mean: trec" in message and "sst5" in message and "tfds:NAME" in message


def test_missing_files_say_where_to_point(tmp_path):
    with pytest.raises(catalog.DatasetError, match=r"ag_news/train.csv is missing.*--data-dir"):
        catalog.load_dataset("ag_news", tmp_path)
    with pytest.raises(catalog.DatasetError, match=r"nor orig/rt-polarity.all"):
        catalog.load_dataset("mr", tmp_path)


def test_no_data_dir(monkeypatch):
    monkeypatch.delenv(catalog.DATA_VARIABLE, raising=False)
    with pytest.raises(catalog.DatasetError, match="KERAS_POSATTN_DATA"):
        catalog.load_dataset("trec")


def test_data_dir_from_environment(tmp_path, monkeypatch):
    write(tmp_path / "trec/train.tsv", "0\ta\n1\tb\n" * 10)
    write(tmp_path / "trec/test.tsv", "0\tc\n")
    monkeypatch.setenv(catalog.DATA_VARIABLE, str(tmp_path))
    assert len(catalog.load_dataset("trec").test) == 1


def test_fold_and_phrases_only_where_they_apply(tmp_path):
    write(tmp_path / "trec/train.tsv", "0\ta\n1\tb\n" * 10)
    write(tmp_path / "trec/test.tsv", "0\tc\n")
    with pytest.raises(catalog.DatasetError, match="--fold applies to"):
        catalog.load_dataset("trec", tmp_path, fold=2)
    with pytest.raises(catalog.DatasetError, match="--phrases applies to sst5 and sst2"):
        catalog.load_dataset("trec", tmp_path, phrases=True)


def test_tfds_without_the_package_is_one_line(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_tfds(name, *args, **kwargs):
        if name == "tensorflow_datasets":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tfds)
    with pytest.raises(catalog.DatasetError, match="pip install tensorflow-datasets"):
        catalog.load_dataset("tfds:imdb_reviews")


# --- cross-validation ---------------------------------------------------------------------


def test_stratified_folds_partition_and_balance():
    labels = np.array([0] * 73 + [1] * 27)
    folds = catalog.stratified_folds(labels, seed=3)
    assert set(folds.tolist()) == set(range(10))
    for k in range(10):
        in_fold = labels[folds == k]
        assert 9 <= len(in_fold) <= 11
        assert 7 <= (in_fold == 0).sum() <= 8
    assert np.array_equal(folds, catalog.stratified_folds(labels, seed=3))
    assert not np.array_equal(folds, catalog.stratified_folds(labels, seed=4))


def test_cv_folds_cover_every_example_once(tmp_path):
    rows = "".join(f"{int(i < 60)}\tsentence {i}\n" for i in range(200))
    write(tmp_path / "mr/all.tsv", rows)
    write(tmp_path / "mr/labels.txt", "negative\npositive\n")
    tests = []
    for fold in range(10):
        splits = catalog.load_dataset("mr", tmp_path, fold=fold)
        assert splits.fold == fold and splits.num_folds == 10
        assert len(splits.train) + len(splits.dev) + len(splits.test) == 200
        assert not set(splits.test.texts) & (set(splits.train.texts) | set(splits.dev.texts))
        assert not set(splits.dev.texts) & set(splits.train.texts)
        assert (splits.test.labels == 1).sum() == 6  # 60 positives, 6 per fold
        tests += splits.test.texts
    assert sorted(tests) == sorted(f"sentence {i}" for i in range(200))
    with pytest.raises(catalog.DatasetError, match="--fold must be in 0..9"):
        catalog.load_dataset("mr", tmp_path, fold=10)


def test_cv_from_original_file(tmp_path):
    write(tmp_path / "mpqa/orig/mpqa.all", "".join(f"{i % 2} phrase {i}\n" for i in range(40)))
    splits = catalog.load_dataset("mpqa", tmp_path, fold=1)
    assert len(splits.train) + len(splits.dev) + len(splits.test) == 40
    assert len(splits.test) == 4


# --- SST trees ----------------------------------------------------------------------------


def test_parse_tree_every_subtree():
    phrases = catalog.parse_tree("(3 (2 (2 The) (2 film)) (4 (4 shines) (2 .)))")
    assert (3, "The film shines .") in phrases
    assert (2, "The film") in phrases and (4, "shines") in phrases
    assert len(phrases) == 7
    assert phrases[-1] == (3, "The film shines .")  # the root comes last


@pytest.mark.parametrize("line", ["(3 (2 The) (4 good)", "(3 (2 The)) extra)", "3 The", "(x a)"])
def test_parse_tree_malformed(line):
    with pytest.raises(ValueError, match="malformed tree"):
        catalog.parse_tree(line)


def test_phrases_from_trees_dedup_and_binary(tmp_path):
    trees = "(3 (2 The) (4 good))\n(1 (2 the) (0 awful))\n(2 (2 meh) (2 .))\n"
    write(tmp_path / "sst5/trees/train.txt", trees)
    write(tmp_path / "sst5/train.tsv", "3\tThe good\n1\tthe awful\n2\tmeh .\n")
    write(tmp_path / "sst5/dev.tsv", "3\tx\n")
    write(tmp_path / "sst5/test.tsv", "3\ty\n")
    write(tmp_path / "sst5/labels.txt", "very negative\nnegative\nneutral\npositive\nvery positive\n")
    splits = catalog.load_dataset("sst5", tmp_path, phrases=True)
    pairs = set(zip(splits.train.texts, splits.train.labels.tolist()))
    # "The" and "the" are one phrase after lower-casing; the first one is kept
    assert pairs == {("The", 2), ("good", 4), ("The good", 3), ("awful", 0), ("the awful", 1),
                     ("meh", 2), (".", 2), ("meh .", 2)}
    assert splits.test.texts == ["y"]
    # SST-2 reads SST-5's trees, drops neutral phrases and binarises the rest
    write(tmp_path / "sst2/train.tsv", "1\tThe good\n0\tthe awful\n")
    write(tmp_path / "sst2/dev.tsv", "1\tx\n")
    write(tmp_path / "sst2/test.tsv", "1\ty\n")
    write(tmp_path / "sst2/labels.txt", "negative\npositive\n")
    binary = catalog.load_dataset("sst2", tmp_path, phrases=True)
    assert set(zip(binary.train.texts, binary.train.labels.tolist())) == {
        ("good", 1), ("The good", 1), ("awful", 0), ("the awful", 0)}


def test_malformed_tree_names_file_and_line(tmp_path):
    write(tmp_path / "sst5/trees/train.txt", "(3 (2 a) (2 b))\n(3 (2 a)\n")
    for split in ("train", "dev", "test"):
        write(tmp_path / f"sst5/{split}.tsv", "3\tx\n")
    with pytest.raises(DataFormatError) as info:
        catalog.load_dataset("sst5", tmp_path, phrases=True)
    assert "train.txt" in str(info.value) and ":2" in str(info.value)


# --- the real sets -------------------------------------------------------------------------


@needs_data
@pytest.mark.parametrize("name, sizes, classes", [
    ("sst5", (8544, 1101, 2210), 5),
    ("sst2", (6920, 872, 1821), 2),
    ("trec", (5452, 500), 6),
    ("trec_fine", (5452, 500), 50),
    ("r8", (5485, 2189), 8),
    ("mr", (10662,), 2),
    ("mpqa", (10606,), 2),
])
def test_real_sets_have_the_papers_sizes(name, sizes, classes):
    splits = catalog.load_dataset(name, DATA)
    n = (len(splits.train), len(splits.dev), len(splits.test))
    if len(sizes) == 3:
        assert n == sizes
    elif len(sizes) == 2:
        assert (n[0] + n[1], n[2]) == sizes
    else:
        assert sum(n) == sizes[0] and splits.num_folds == 10
    assert len(splits.label_names) == classes


@needs_data
def test_real_sst_phrases():
    assert len(catalog.load_dataset("sst5", DATA, phrases=True).train) == 156_817
    assert len(catalog.load_dataset("sst2", DATA, phrases=True).train) == 76_961


@needs_data
def test_real_sst_phrases_parsed_from_trees_match_the_prepared_file(tmp_path):
    """The tree parser reproduces train_phrases.tsv (without reading it)."""
    (tmp_path / "sst5" / "trees").mkdir(parents=True)
    (tmp_path / "sst5" / "trees" / "train.txt").symlink_to(DATA / "sst5" / "trees" / "train.txt")
    for split in ("train", "dev", "test", "labels"):
        suffix = ".txt" if split == "labels" else ".tsv"
        (tmp_path / "sst5" / f"{split}{suffix}").symlink_to(DATA / "sst5" / f"{split}{suffix}")
    parsed = catalog.load_dataset("sst5", tmp_path, phrases=True).train
    prepared = catalog.load_dataset("sst5", DATA, phrases=True).train
    assert len(parsed) == len(prepared)
    assert sorted(zip((t.lower() for t in parsed.texts), parsed.labels.tolist())) == sorted(
        zip((t.lower() for t in prepared.texts), prepared.labels.tolist()))


@needs_data
def test_real_ag_news_test_csv():
    texts, labels = catalog.read_zhang_csv(DATA / "ag_news" / "test.csv")
    assert len(texts) == 7600
    assert sorted(set(labels)) == ["0", "1", "2", "3"]
    assert all(t.strip() for t in texts)


@needs_data
def test_real_original_files_match_prepared(tmp_path):
    (tmp_path / "trec" / "orig").mkdir(parents=True)
    for name in ("TREC.train.all", "TREC.test.all"):
        (tmp_path / "trec" / "orig" / name).symlink_to(DATA / "trec" / "orig" / name)
    from_orig = catalog.load_dataset("trec", tmp_path)
    prepared = catalog.load_dataset("trec", DATA)
    assert from_orig.test.texts == prepared.test.texts
    assert from_orig.test.labels.tolist() == prepared.test.labels.tolist()
