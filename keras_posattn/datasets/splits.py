"""Train / validation / test splits of labelled text, from files or generated.

``load_files`` reads the user's files (TSV, CSV, JSONL; see ``readers``),
encodes the labels with the class names found beside the training file, and
holds out seeded 10% slices where a split is missing. ``embedded_task``
generates the embedded default task.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from keras_posattn.datasets import readers
from keras_posattn.datasets import synthetic


@dataclasses.dataclass
class Split:
    """Texts and integer labels."""

    texts: list
    labels: np.ndarray

    def __len__(self):
        return len(self.texts)

    def take(self, indices):
        return Split([self.texts[i] for i in indices], self.labels[indices])


@dataclasses.dataclass
class Splits:
    """What a training run reads: three splits, the class names, a description."""

    train: Split
    dev: Split
    test: Split
    label_names: list
    description: str
    sample_text: str = None
    notes: list = dataclasses.field(default_factory=list)
    name: str = None  # the dataset's name, when loaded by name
    fold: int = None  # the test fold of a cross-validated set
    num_folds: int = None


def hold_out(split, rng, fraction=0.1):
    """``(kept, held)``: a seeded ``fraction`` of ``split`` held out, order kept."""
    n = len(split)
    order = rng.permutation(n)
    k = max(1, int(round(n * fraction)))
    return split.take(np.sort(order[k:])), split.take(np.sort(order[:k]))


#: The command-line option and the ``train()`` argument of each file.
FILE_OPTIONS = {"train": "--train / train_path", "test": "--test / test_path",
                "dev": "--dev / dev_path"}


def load_files(train_path, test_path=None, dev_path=None, seed=1234,
               text_column="text", label_column="label", encoding="auto"):
    """Read labelled files into ``Splits``.

    Without a dev file, 10% of the training data (seeded) is held out for
    validation; without a test file, another 10% for testing. Class names
    come from a ``labels.txt`` beside the training file, else from the labels.

    Raises:
        FileNotFoundError: a file is missing (the message names its option).
        readers.DataFormatError: a malformed line or an unknown label
            (``file:line: ...``), or training data with fewer than two classes.
    """
    paths = {"train": train_path, "test": test_path, "dev": dev_path}
    for split, path in paths.items():
        if path is not None and not Path(path).is_file():
            what = "is a folder, not a file" if Path(path).is_dir() else "no such file"
            raise FileNotFoundError(f"{path}: {what} (given as {FILE_OPTIONS[split]}).")

    def read(path):
        return readers.read_labelled(path, text_column=text_column,
                                     label_column=label_column, encoding=encoding)

    raw = read(train_path)
    labels_file = Path(train_path).parent / "labels.txt"
    known = readers.find_label_names(train_path)
    names_from = str(labels_file) if known is not None else None
    ids, names = readers.encode_labels(raw.labels, known, path=raw.path, lines=raw.lines,
                                       names_from=names_from)
    _require_two_classes(raw, ids, names, names_from)
    train = Split(list(raw.texts), ids)
    names_from = names_from or f"the labels of {train_path}"

    def encoded(path):
        other = read(path)
        ids = readers.encode_labels(other.labels, names, path=other.path, lines=other.lines,
                                    names_from=names_from)[0]
        return Split(list(other.texts), ids)

    test = encoded(test_path) if test_path is not None else None
    dev = encoded(dev_path) if dev_path is not None else None
    rng = np.random.default_rng(seed)
    notes = []
    if test is None:
        train, test = hold_out(train, rng)
        notes.append("No --test file: holding out 10% of the training data as test.")
    if dev is None:
        train, dev = hold_out(train, rng)
    return Splits(train, dev, test, list(names), str(train_path),
                  sample_text=test.texts[0] if len(test) else None, notes=notes)


def _require_two_classes(raw, ids, names, names_from):
    """A classifier trained on one class reports accuracy 1.0 and learns nothing."""
    present = np.unique(ids)
    if len(present) >= 2:
        return
    if not len(present):
        raise readers.DataFormatError(raw.path, None, "no labelled examples in the training file")
    listed = f"; {names_from} names {len(names)}" if names_from else ""
    raise readers.DataFormatError(
        raw.path, None,
        f"every training example has the label {names[present[0]]!r}{listed}: a classifier "
        "needs examples of at least two classes",
    )


def embedded_task(seed=1234, size=None, documents=False):
    """The embedded default task as ``Splits`` (10% of train held out for
    validation); ``documents=True``: its multi-sentence variant
    (``synthetic.as_documents``) for hierarchical models."""
    kwargs = {"seed": seed}
    if size:
        kwargs.update(num_train=int(size), num_test=max(200, int(size) // 4))
    task = synthetic.generate_position_task(**kwargs)
    if documents:
        task = synthetic.as_documents(task, seed=seed)
    train = Split(list(task.train_texts), np.asarray(task.train_labels, "int32"))
    test = Split(list(task.test_texts), np.asarray(task.test_labels, "int32"))
    train, dev = hold_out(train, np.random.default_rng(seed))
    return Splits(train, dev, test, list(task.label_names),
                  "embedded default: " + task.description.splitlines()[0],
                  sample_text=(synthetic.DEFAULT_SAMPLE_DOCUMENT if documents
                               else synthetic.DEFAULT_SAMPLE_SENTENCE))
