"""``datasets.splits.load_files``: the errors a user's files can meet name
the file, the 1-based line and what to change."""

import numpy as np
import pytest

from keras_posattn import cli
from keras_posattn.datasets.readers import DataFormatError
from keras_posattn.datasets.splits import load_files

TRAIN = "".join(f"{'pos' if i % 2 else 'neg'}\ttext number {i}\n" for i in range(40))


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "train.tsv").write_text(TRAIN, encoding="utf-8")
    (tmp_path / "labels.txt").write_text("neg\npos\n", encoding="utf-8")
    return tmp_path


def test_files_load_with_their_classes(folder):
    (folder / "test.tsv").write_text("pos\tgood\nneg\tbad\n", encoding="utf-8")
    splits = load_files(folder / "train.tsv", folder / "test.tsv")
    assert splits.label_names == ["neg", "pos"]
    np.testing.assert_array_equal(splits.test.labels, [1, 0])
    assert len(splits.train) + len(splits.dev) == 40


@pytest.mark.parametrize("split", ["test", "dev"])
def test_an_unknown_label_names_its_file_and_line(folder, split):
    """Not 'unknown label (example 0)' for every file: the file that holds it
    and its 1-based line, and where the class names came from."""
    (folder / f"{split}.tsv").write_text("pos\tgood\n\nlabel\tbad\n", encoding="utf-8")
    with pytest.raises(DataFormatError) as excinfo:
        load_files(folder / "train.tsv", **{f"{split}_path": folder / f"{split}.tsv"})
    assert str(excinfo.value) == (
        f"{folder / f'{split}.tsv'}:3: unknown label 'label'; the class names "
        f"(ids 0..1, from {folder / 'labels.txt'}) are ['neg', 'pos']")


def test_an_unknown_label_without_labels_txt_names_the_training_file(folder):
    (folder / "labels.txt").unlink()
    (folder / "test.tsv").write_text("pos\tgood\nneutral\tmeh\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"test.tsv:2: unknown label 'neutral'; the class "
                                              r"names \(ids 0..1, from the labels of .*train.tsv\)"):
        load_files(folder / "train.tsv", folder / "test.tsv")


def test_a_header_row_in_the_training_file(folder):
    (folder / "train.tsv").write_text("label\ttext\n" + TRAIN, encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"train.tsv:1: 'label\\ttext' looks like a header row"):
        load_files(folder / "train.tsv")


def test_training_data_of_one_class_is_refused(folder):
    """Six names in labels.txt and one class present trained and reported
    accuracy 1.0; now it names the file."""
    (folder / "labels.txt").write_text("ABBR\nDESC\nENTY\nHUM\nLOC\nNUM\n", encoding="utf-8")
    (folder / "train.tsv").write_text("DESC\twhat is it\n" * 30, encoding="utf-8")
    with pytest.raises(DataFormatError) as excinfo:
        load_files(folder / "train.tsv")
    assert str(excinfo.value) == (
        f"{folder / 'train.tsv'}: every training example has the label 'DESC'; "
        f"{folder / 'labels.txt'} names 6: a classifier needs examples of at least two classes")
    (folder / "labels.txt").unlink()
    with pytest.raises(DataFormatError, match="every training example has the label 'DESC': a"):
        load_files(folder / "train.tsv")


@pytest.mark.parametrize("split, option", [("train", "--train / train_path"),
                                           ("test", "--test / test_path"),
                                           ("dev", "--dev / dev_path")])
def test_a_missing_file_names_its_option(folder, split, option):
    paths = {"train_path": folder / "train.tsv", f"{split}_path": folder / "missing.tsv"}
    with pytest.raises(FileNotFoundError) as excinfo:
        load_files(**paths)
    assert str(excinfo.value) == f"{folder / 'missing.tsv'}: no such file (given as {option})."


def test_the_train_command_names_the_option_of_a_missing_file(tmp_path, capsys):
    code = cli.main(["train", "mpsan", "--train", str(tmp_path / "missing.tsv"),
                     "--output-dir", str(tmp_path / "run"), "--no-export"])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"keras-posattn: error: {tmp_path / 'missing.tsv'}: no such file "
                   "(given as --train / train_path)."]
