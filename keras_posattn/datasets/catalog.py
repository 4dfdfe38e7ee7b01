"""Benchmark datasets by name: ``load_dataset("trec", data_dir)``.

Each name knows its layout under the data folder (``--data-dir``, or the
``KERAS_POSATTN_DATA`` environment variable): the project's prepared files
(``<name>/train.tsv``...: ``label<TAB>text``, ``labels.txt`` beside them) and,
when those are absent, the files as first published (``orig/``: ``<set>.all``
lines ``label text``, possibly cp1252; SST's ``stsa.*``; TREC's
``TREC.*.all``; the Zhang et al. CSVs). Files are split on ``"\\n"`` only
(raw MR and SUBJ texts hold U+0085).

- ``sst5``, ``sst2``: train / dev / test sentences; ``phrases=True`` trains on
  every labelled phrase of the training trees (``train_phrases.tsv``, or
  parsed from ``trees/train.txt``; SST-2's from SST-5's trees without the
  neutral ones), as DiSAN and MPSAN train; dev and test stay sentences.
- ``trec`` (6 coarse classes), ``trec_fine`` (50 ``COARSE:fine`` classes):
  train / test; dev is a seeded 10% of train.
- ``mr``, ``cr``, ``subj``, ``mpqa``: no official split. Stratified 10-fold
  cross-validation with a fixed seed: ``fold`` k (0..9) is the test fold, dev
  is a seeded stratified 10% of the other nine. ``Splits.num_folds`` is 10.
- ``imdb`` (JSONL), ``r8``, ``r52`` (``reuters/<name>``), ``20ng``: train /
  test, dev a seeded 10% of train.
- ``ag_news``, ``yelp_polarity``, ``yelp_full``, ``yahoo``,
  ``amazon_polarity``: Zhang et al.'s CSVs (``"class","title",...``, classes
  1..k, ``classes.txt``); title and body joined, ``\\n`` escapes undone.
- ``tfds:NAME``: a TensorFlow Datasets set (needs ``tensorflow-datasets`` and
  the network; a one-line error otherwise).
"""

from __future__ import annotations

import csv
import dataclasses
import difflib
import io
import os
import re
from pathlib import Path

import numpy as np

from keras_posattn.datasets import readers
from keras_posattn.datasets.splits import Split, Splits, hold_out

DATA_VARIABLE = "KERAS_POSATTN_DATA"
NUM_FOLDS = 10


class DatasetError(ValueError):
    """A dataset that cannot be found or read (one line, for the CLI)."""


@dataclasses.dataclass(frozen=True)
class DatasetSpec:
    """Where a named dataset lives and how it is split."""

    name: str
    folder: str
    kind: str  # "split" (files per split), "cv" (one file, 10 folds), "zhang" (CSVs)
    description: str
    train: str = "train.tsv"
    dev: str = None
    test: str = "test.tsv"
    orig: dict = None  # split -> file under orig/ ("label text" lines)
    phrases: bool = False
    label_file: bool = True  # class names from labels.txt (else: the sorted distinct labels)


DATASETS = {spec.name: spec for spec in (
    DatasetSpec("sst5", "sst5", "split", "SST-5 sentences (5 classes), 8544 / 1101 / 2210",
                dev="dev.tsv", orig={"train": "stsa.fine.train", "dev": "stsa.fine.dev",
                                     "test": "stsa.fine.test"}, phrases=True),
    DatasetSpec("sst2", "sst2", "split", "SST-2 sentences (2 classes), 6920 / 872 / 1821",
                dev="dev.tsv", orig={"train": "stsa.binary.train", "dev": "stsa.binary.dev",
                                     "test": "stsa.binary.test"}, phrases=True),
    DatasetSpec("trec", "trec", "split", "TREC questions (6 coarse classes), 5452 / 500",
                orig={"train": "TREC.train.all", "test": "TREC.test.all"}),
    DatasetSpec("trec_fine", "trec", "split", "TREC questions (50 fine classes), 5452 / 500",
                train="train_fine.tsv", test="test_fine.tsv", label_file=False),
    DatasetSpec("mr", "mr", "cv", "MR movie-review polarity, 10662, 10-fold CV",
                train="all.tsv", test=None, orig={"all": "rt-polarity.all"}),
    DatasetSpec("cr", "cr", "cv", "CR customer-review polarity, 3775, 10-fold CV",
                train="all.tsv", test=None, orig={"all": "custrev.all"}),
    DatasetSpec("subj", "subj", "cv", "SUBJ subjectivity, 10000, 10-fold CV",
                train="all.tsv", test=None, orig={"all": "subj.all"}),
    DatasetSpec("mpqa", "mpqa", "cv", "MPQA opinion polarity, 10606, 10-fold CV",
                train="all.tsv", test=None, orig={"all": "mpqa.all"}),
    DatasetSpec("imdb", "imdb", "split", "IMDB reviews (2 classes), 25000 / 25000",
                train="train.jsonl", test="test.jsonl"),
    DatasetSpec("r8", "reuters/r8", "split", "Reuters R8 newswire topics, 5485 / 2189"),
    DatasetSpec("r52", "reuters/r52", "split", "Reuters R52 newswire topics, 6532 / 2568"),
    DatasetSpec("20ng", "20ng", "split", "20 Newsgroups topics, 11314 / 7532"),
    DatasetSpec("ag_news", "ag_news", "zhang", "AG News topics (4 classes), 120000 / 7600",
                train="train.csv", test="test.csv"),
    DatasetSpec("yelp_polarity", "yelp_polarity", "zhang", "Yelp polarity, 560000 / 38000",
                train="train.csv", test="test.csv"),
    DatasetSpec("yelp_full", "yelp_full", "zhang", "Yelp full (5 stars), 650000 / 50000",
                train="train.csv", test="test.csv"),
    DatasetSpec("yahoo", "yahoo", "zhang", "Yahoo! Answers topics (10), 1400000 / 60000",
                train="train.csv", test="test.csv"),
    DatasetSpec("amazon_polarity", "amazon_polarity", "zhang",
                "Amazon polarity, 3600000 / 400000", train="train.csv", test="test.csv"),
)}


def known_datasets():
    """Dataset names, for help texts and errors."""
    return sorted(DATASETS) + ["tfds:NAME"]


def default_data_dir():
    """``KERAS_POSATTN_DATA`` if set, else None."""
    value = os.environ.get(DATA_VARIABLE)
    return Path(value) if value else None


def load_dataset(name, data_dir=None, fold=None, seed=1234, phrases=False):
    """``Splits`` of a named dataset (see the module docstring).

    Args:
        name: a name from ``known_datasets()``, or ``"tfds:NAME"``.
        data_dir: the folder holding the datasets' folders (default
            ``KERAS_POSATTN_DATA``).
        fold: the test fold of a cross-validated set (0..9; default 0).
        seed: fixes the folds, the held-out dev splits and nothing else.
        phrases: train on the labelled phrases of SST's training trees.
    """
    if name.startswith("tfds:"):
        return _load_tfds(name[5:], seed)
    if name not in DATASETS:
        close = difflib.get_close_matches(name, list(DATASETS), n=3)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        raise DatasetError(f"Unknown dataset {name!r}.{hint} Known: {', '.join(known_datasets())}.")
    spec = DATASETS[name]
    data_dir = Path(data_dir) if data_dir else default_data_dir()
    if data_dir is None:
        raise DatasetError(
            f"Dataset {name!r}: where are the datasets? Pass --data-dir DIR (or set "
            f"{DATA_VARIABLE}) to the folder that holds {spec.folder}/."
        )
    folder = data_dir / spec.folder
    if phrases and not spec.phrases:
        raise DatasetError(f"--phrases applies to sst5 and sst2 (labelled parse trees), not {name!r}.")
    if spec.kind == "zhang":
        splits = _load_zhang(spec, folder, seed)
    elif spec.kind == "cv":
        splits = _load_cv(spec, folder, seed, 0 if fold is None else int(fold))
    else:
        if fold not in (None, 0):
            raise DatasetError(f"{name!r} has an official test split; --fold applies to "
                               "mr, cr, subj and mpqa.")
        splits = _load_split(spec, folder, seed, phrases)
    splits.name = name
    return splits


# --- files per split ------------------------------------------------------------


def _need(path, spec, hint=""):
    if not path.is_file():
        raise DatasetError(
            f"Dataset {spec.name!r}: {path} is missing{hint}. Point --data-dir (or "
            f"{DATA_VARIABLE}) at the folder that holds {spec.folder}/."
        )
    return path


def _read(path):
    raw = readers.read_labelled(path, encoding="auto")
    return list(raw.texts), list(raw.labels)


def _read_orig(path):
    """``label text`` lines (the original MR/SUBJ/CR/MPQA/SST/TREC files)."""
    data = path.read_bytes()
    text, _ = readers._decode(path, data, "auto")
    texts, labels = [], []
    for number, line in readers._iter_lines(text):
        if readers._is_blank(line):
            continue
        label, _, body = line.strip(" ").partition(" ")
        if not body.strip():
            raise readers.DataFormatError(path, number, f"expected 'label text', found {line[:60]!r}")
        texts.append(body.strip())
        labels.append(label.split(":")[0] if path.name.startswith("TREC") else label)
    return texts, labels


def _files(spec, folder):
    """split -> (texts, raw labels), from the prepared files or from orig/."""
    out = {}
    prepared = {"train": spec.train, "dev": spec.dev, "test": spec.test}
    for split, filename in prepared.items():
        if filename is None:
            continue
        path = folder / filename
        if path.is_file():
            out[split] = _read(path)
        elif spec.orig and split in spec.orig and (folder / "orig" / spec.orig[split]).is_file():
            out[split] = _read_orig(folder / "orig" / spec.orig[split])
        else:
            hint = f" (nor orig/{spec.orig[split]})" if spec.orig and split in spec.orig else ""
            _need(path, spec, hint)
    return out


def _encode(spec, folder, files):
    names = None
    if spec.label_file and (folder / "labels.txt").is_file():
        names = readers.read_label_names(folder / "labels.txt")
    elif not spec.label_file:
        # every split's labels, so a class seen only in test still has an id
        everything = [label for _, labels in files.values() for label in labels]
        names = readers.encode_labels(everything)[1]
    encoded = {}
    for split, (texts, labels) in files.items():
        try:
            ids, found = readers.encode_labels(labels, names)
        except ValueError as e:
            raise DatasetError(f"Dataset {spec.name!r}, {split} split: {e}") from None
        names = names or found
        encoded[split] = Split(texts, ids)
    return encoded, list(names)


def _load_split(spec, folder, seed, phrases):
    if not folder.is_dir():
        _need(folder / spec.train, spec)
    files = _files(spec, folder)
    splits, names = _encode(spec, folder, files)
    notes = []
    if phrases:
        texts, labels = _phrases(spec, folder)
        splits["train"] = Split(texts, readers.encode_labels(labels, names)[0])
        notes.append(f"Training on {len(texts)} labelled phrases of the SST training trees.")
    rng = np.random.default_rng(seed)
    if "dev" not in splits:
        splits["train"], splits["dev"] = hold_out(splits["train"], rng)
        notes.append("No dev split: holding out a seeded 10% of train for validation.")
    return Splits(splits["train"], splits["dev"], splits["test"], names,
                  f"{spec.name}: {spec.description}", sample_text=splits["test"].texts[0],
                  notes=notes)


# --- SST phrases -------------------------------------------------------------------


def _phrases(spec, folder):
    """Every labelled phrase of the training trees, deduplicated after lower-casing."""
    prepared = folder / "train_phrases.tsv"
    if prepared.is_file():
        return _read(prepared)
    trees = folder / "trees" / "train.txt"
    binary = spec.name == "sst2"
    if not trees.is_file() and binary:
        trees = folder.parent / "sst5" / "trees" / "train.txt"
    _need(trees, spec, " (and no train_phrases.tsv)")
    seen, texts, labels = set(), [], []
    for number, line in readers._iter_lines(trees.read_text(encoding="utf-8")):
        if not line.strip():
            continue
        try:
            phrases = parse_tree(line)
        except ValueError as e:
            raise readers.DataFormatError(trees, number, str(e)) from None
        for label, text in phrases:
            if binary:
                if label == 2:
                    continue
                label = 0 if label < 2 else 1
            key = text.lower()
            if key in seen:
                continue
            seen.add(key)
            texts.append(text)
            labels.append(str(label))
    return texts, labels


# ASCII whitespace only: a tree's token may hold U+00A0 ("2\u00a01\/2").
_TOKEN = re.compile(r"\(|\)|[^ \t\r\n()]+")


def parse_tree(line):
    """``(label, text)`` for every subtree of a PTB-style sentiment tree,
    ``"(3 (2 The) (4 good) )"`` -> ``[(2, "The"), (4, "good"), (3, "The good")]``."""
    tokens = _TOKEN.findall(line)
    pos = 0
    out = []

    def node():
        nonlocal pos
        if tokens[pos] != "(":
            raise ValueError(f"expected '(' at token {pos}")
        pos += 1
        label = int(tokens[pos])
        pos += 1
        words = []
        while tokens[pos] != ")":
            if tokens[pos] == "(":
                words.extend(node())
            else:
                words.append(tokens[pos])
                pos += 1
        pos += 1
        out.append((label, " ".join(words)))
        return words

    try:
        node()
    except (IndexError, ValueError) as e:
        raise ValueError(f"malformed tree: {e}") from None
    if pos != len(tokens):
        raise ValueError("malformed tree: text after the root")
    return out


# --- cross-validation ---------------------------------------------------------------


def stratified_folds(labels, num_folds=NUM_FOLDS, seed=1234):
    """Fold index (0..num_folds-1) of every example: each class is shuffled
    with ``seed`` and dealt round-robin, so every fold has its share."""
    labels = np.asarray(labels)
    folds = np.zeros(len(labels), dtype=np.int64)
    rng = np.random.default_rng(seed)
    offset = 0
    for label in np.unique(labels):
        index = np.flatnonzero(labels == label)
        rng.shuffle(index)
        folds[index] = (np.arange(len(index)) + offset) % num_folds
        offset += len(index)
    return folds


def _load_cv(spec, folder, seed, fold):
    if not 0 <= fold < NUM_FOLDS:
        raise DatasetError(f"{spec.name!r}: --fold must be in 0..{NUM_FOLDS - 1}, got {fold}.")
    files = _files(spec, folder) if (folder / spec.train).is_file() else None
    if files is None:
        if spec.orig and (folder / "orig" / spec.orig["all"]).is_file():
            files = {"train": _read_orig(folder / "orig" / spec.orig["all"])}
        else:
            _need(folder / spec.train, spec, f" (nor orig/{spec.orig['all']})")
    everything, names = _encode(spec, folder, files)
    data = everything["train"]
    folds = stratified_folds(data.labels, seed=seed)
    test = data.take(np.flatnonzero(folds == fold))
    rest = data.take(np.flatnonzero(folds != fold))
    # dev: a stratified 10% of the other folds (their own round-robin deal)
    inner = stratified_folds(rest.labels, seed=seed + 1)
    train, dev = rest.take(np.flatnonzero(inner != 0)), rest.take(np.flatnonzero(inner == 0))
    return Splits(train, dev, test, names,
                  f"{spec.name}: {spec.description}, fold {fold} of {NUM_FOLDS}",
                  sample_text=test.texts[0], fold=fold, num_folds=NUM_FOLDS)


# --- Zhang et al. CSVs ------------------------------------------------------------------


def read_zhang_csv(path):
    text, _ = readers._decode(path, path.read_bytes(), "auto")
    texts, labels = [], []
    reader = csv.reader(io.StringIO(text, newline=""))
    for row in reader:
        if not row or not any(field.strip() for field in row):
            continue
        number = reader.line_num
        if len(row) < 2 or not row[0].strip().isdigit():
            raise readers.DataFormatError(
                path, number, f'expected "class","title",... with a numeric class, found {row[:2]!r}')
        body = " ".join(field.replace("\\n", " ").strip() for field in row[1:] if field.strip())
        texts.append(body)
        labels.append(str(int(row[0]) - 1))
    return texts, labels


def _load_zhang(spec, folder, seed):
    train = _need(folder / spec.train, spec)
    test = _need(folder / spec.test, spec)
    names = None
    if (folder / "classes.txt").is_file():
        names = [n.strip() for n in (folder / "classes.txt").read_text(encoding="utf-8").split("\n")
                 if n.strip()]
    encoded = {}
    for split, path in (("train", train), ("test", test)):
        texts, labels = read_zhang_csv(path)
        ids = np.asarray([int(x) for x in labels], dtype=np.int32)
        if names and ids.size and ids.max() >= len(names):
            raise DatasetError(f"{path}: class {ids.max() + 1} but classes.txt names {len(names)}.")
        encoded[split] = Split(texts, ids)
    k = len(names) if names else int(max(encoded["train"].labels.max(), encoded["test"].labels.max())) + 1
    names = names or [str(i + 1) for i in range(k)]
    train_split, dev = hold_out(encoded["train"], np.random.default_rng(seed))
    return Splits(train_split, dev, encoded["test"], names, f"{spec.name}: {spec.description}",
                  sample_text=encoded["test"].texts[0],
                  notes=["No dev split: holding out a seeded 10% of train for validation."])


# --- TensorFlow Datasets ---------------------------------------------------------------


def _load_tfds(name, seed):
    try:
        import tensorflow_datasets as tfds
    except ImportError:
        raise DatasetError(
            f"tfds:{name} needs the tensorflow-datasets package (pip install tensorflow-datasets) "
            "and network access to download the data."
        ) from None
    try:
        train, test = tfds.load(name, split=["train", "test"], as_supervised=True)
        info = tfds.builder(name).info
    except Exception as e:  # no network, unknown name, ... : one line
        raise DatasetError(f"tfds:{name}: {type(e).__name__}: {str(e).splitlines()[0]}") from None

    def to_split(ds):
        texts, labels = [], []
        for text, label in tfds.as_numpy(ds):
            texts.append(text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text))
            labels.append(int(label))
        return Split(texts, np.asarray(labels, dtype=np.int32))

    label_feature = info.features["label"] if "label" in info.features else None
    names = list(label_feature.names) if label_feature is not None and hasattr(label_feature, "names") \
        else None
    train_split, dev = hold_out(to_split(train), np.random.default_rng(seed))
    test_split = to_split(test)
    names = names or [str(i) for i in range(int(max(train_split.labels.max(), test_split.labels.max())) + 1)]
    return Splits(train_split, dev, test_split, names, f"tfds:{name}",
                  sample_text=test_split.texts[0])


def describe():
    """One line per dataset, for ``keras-posattn datasets``."""
    return "\n".join(f"{name:16s} {spec.description}" for name, spec in sorted(DATASETS.items()))


__all__ = [
    "DATASETS",
    "DatasetError",
    "describe",
    "known_datasets",
    "load_dataset",
    "parse_tree",
    "read_zhang_csv",
    "stratified_folds",
]
