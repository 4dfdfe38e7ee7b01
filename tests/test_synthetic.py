"""Tests of the embedded position task and the bag-of-words baseline."""

from __future__ import annotations

import collections
import os

import numpy as np
import pytest

from keras_posattn.datasets import (
    DEFAULT_SAMPLE_LABEL,
    DEFAULT_SAMPLE_SENTENCE,
    LABEL_NAMES,
    SyntheticTask,
    generate_position_task,
    label_of,
    write_tsv,
)
from keras_posattn.baselines import BagOfWordsClassifier
from keras_posattn.baselines import bag_of_words_baseline
from keras_posattn.datasets import synthetic


@pytest.fixture(scope="module")
def task() -> SyntheticTask:
    return generate_position_task()


def _key_positions(text: str) -> tuple[int, int]:
    tokens = text.split()
    (neg,) = [i for i, t in enumerate(tokens) if t in synthetic.NEGATORS]
    (adj,) = [i for i, t in enumerate(tokens) if t in synthetic.ADJECTIVES]
    return neg, adj


# -- generation --------------------------------------------------------------


def test_deterministic_same_seed():
    a = generate_position_task(300, 100, seed=7)
    b = generate_position_task(300, 100, seed=7)
    assert a.train_texts == b.train_texts
    assert a.test_texts == b.test_texts
    assert a.train_labels.tobytes() == b.train_labels.tobytes()
    assert a.test_labels.tobytes() == b.test_labels.tobytes()
    assert a.label_names == b.label_names
    assert a.description == b.description


def test_different_seed_differs():
    a = generate_position_task(300, 100, seed=7)
    b = generate_position_task(300, 100, seed=8)
    assert a.train_texts != b.train_texts
    assert a.test_texts != b.test_texts


def test_sizes_and_types(task):
    assert len(task.train_texts) == len(task.train_labels) == 4000
    assert len(task.test_texts) == len(task.test_labels) == 1000
    assert task.train_labels.dtype == np.int32
    assert task.test_labels.dtype == np.int32
    assert task.label_names == LABEL_NAMES
    assert len(task.label_names) == task.num_classes == 4
    assert all(isinstance(t, str) for t in task.train_texts + task.test_texts)
    assert isinstance(task.description, str) and task.description
    small = generate_position_task(num_train=10, num_test=3, seed=0)
    assert len(small.train_texts) == 10 and len(small.test_texts) == 3
    empty = generate_position_task(num_train=0, num_test=0)
    assert empty.train_texts == [] and empty.train_labels.shape == (0,)


def test_classes_balanced(task):
    k = len(task.label_names)
    for labels in (task.train_labels, task.test_labels):
        counts = np.bincount(labels, minlength=k)
        assert counts.shape == (k,)
        expected = len(labels) / k
        assert np.all(np.abs(counts - expected) <= 0.05 * expected), counts


def test_train_test_disjoint_and_unique(task):
    train, test = set(task.train_texts), set(task.test_texts)
    assert len(train) == len(task.train_texts)
    assert len(test) == len(task.test_texts)
    assert not train & test
    assert DEFAULT_SAMPLE_SENTENCE not in train | test


def test_examples_follow_the_rule(task):
    texts = task.train_texts + task.test_texts
    labels = np.concatenate([task.train_labels, task.test_labels])
    distances = collections.Counter()
    for text, label in zip(texts, labels):
        tokens = text.split()
        assert text == text.lower() and text == " ".join(tokens)
        assert synthetic.MIN_LENGTH <= len(tokens) <= synthetic.MAX_LENGTH
        neg, adj = _key_positions(text)  # exactly one of each
        others = [t for i, t in enumerate(tokens) if i not in (neg, adj)]
        assert set(others) <= set(synthetic.FILLER_VOCABULARY)
        d = abs(neg - adj)
        assert d <= 3 or d >= 6
        near, neg_first = d <= 3, neg < adj
        assert label == {(True, True): 0, (False, True): 1,
                         (True, False): 2, (False, False): 3}[(near, neg_first)]
        assert label_of(text) == label
        distances[d] += 1
    # all near distances occur, and far ones span a range
    assert {1, 2, 3} <= set(distances)
    assert max(distances) >= 15
    # several negators and adjectives play the key roles
    keys = collections.Counter(t for text in texts for t in text.split()
                               if t in synthetic.NEGATORS + synthetic.ADJECTIVES)
    assert set(keys) == set(synthetic.NEGATORS) | set(synthetic.ADJECTIVES)
    assert 100 <= len(synthetic.FILLER_VOCABULARY) <= 300


def test_swapping_key_words_flips_direction_only(task):
    """Same bag of words, swapped key words: only the direction changes."""
    flip = {0: 2, 1: 3, 2: 0, 3: 1}
    for text, label in list(zip(task.train_texts, task.train_labels))[:500]:
        tokens = text.split()
        neg, adj = _key_positions(text)
        tokens[neg], tokens[adj] = tokens[adj], tokens[neg]
        swapped = " ".join(tokens)
        assert sorted(swapped.split()) == sorted(text.split())
        assert label_of(swapped) == flip[int(label)]


def test_label_of_rejects_other_sentences():
    with pytest.raises(ValueError):
        label_of("the soup was tasty")
    with pytest.raises(ValueError):
        label_of("not good and never tasty")
    with pytest.raises(ValueError):
        label_of("not the soup was a tasty")  # distance 5: undefined


def test_default_sample_sentence():
    assert DEFAULT_SAMPLE_LABEL in LABEL_NAMES
    assert DEFAULT_SAMPLE_LABEL == LABEL_NAMES[label_of(DEFAULT_SAMPLE_SENTENCE)]
    tokens = DEFAULT_SAMPLE_SENTENCE.split()
    assert synthetic.MIN_LENGTH <= len(tokens) <= synthetic.MAX_LENGTH
    vocab = (set(synthetic.FILLER_VOCABULARY) | set(synthetic.NEGATORS)
             | set(synthetic.ADJECTIVES))
    assert set(tokens) <= vocab


def test_write_tsv(task, tmp_path):
    small = generate_position_task(50, 20, seed=3)
    train_path, test_path = write_tsv(small, tmp_path / "out")
    assert os.path.basename(train_path) == "train.tsv"
    assert os.path.basename(test_path) == "test.tsv"
    for path, texts, labels in ((train_path, small.train_texts, small.train_labels),
                                (test_path, small.test_texts, small.test_labels)):
        with open(path, encoding="utf-8") as f:
            rows = [line.rstrip("\n").split("\t") for line in f]
        assert all(len(r) == 2 for r in rows)
        assert [int(r[0]) for r in rows] == labels.tolist()
        assert [r[1] for r in rows] == texts
    with open(tmp_path / "out" / "labels.txt", encoding="utf-8") as f:
        assert f.read().splitlines() == small.label_names


# -- baselines ---------------------------------------------------------------


def test_bag_of_words_is_at_chance(task):
    acc = bag_of_words_baseline(task.train_texts, task.train_labels,
                                task.test_texts, task.test_labels, seed=0)
    assert acc <= 1.0 / len(task.label_names) + 0.07, acc


def test_bag_of_words_learns_count_based_labels(task):
    """Sanity check that the baseline works when word counts do decide."""
    group = set(synthetic.ADJECTIVES[:6])

    def label(text):
        return int(any(t in group for t in text.split()))

    ytr = np.array([label(t) for t in task.train_texts])
    yte = np.array([label(t) for t in task.test_texts])
    acc = bag_of_words_baseline(task.train_texts, ytr, task.test_texts, yte)
    assert acc >= 0.95, acc


def test_bag_of_words_classifier_api():
    texts = ["good food", "Great FOOD", "bad service", "awful service", "good"]
    labels = np.array(["pos", "pos", "neg", "neg", "pos"])
    clf = BagOfWordsClassifier(num_iterations=200).fit(texts, labels)
    assert list(clf.predict(["good", "awful", "unseen words only"])[:2]) == ["pos", "neg"]
    proba = clf.predict_proba(texts)
    assert proba.shape == (5, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert clf.score(texts, labels) == 1.0


# -- learnability from order -------------------------------------------------


def test_order_aware_model_learns_task(task):
    """A small stock Keras model that sees order reaches >= 0.85: a convolution
    whose features keep their positions (flattened, not pooled). A Bi-LSTM
    over the convolution learns it too, in six times the time (0.999 against
    0.987-0.995 over seeds 0-3 after 6 epochs)."""
    keras = pytest.importorskip("keras")
    from keras import layers

    max_len = synthetic.MAX_LENGTH
    vocab: dict[str, int] = {}
    for text in task.train_texts:
        for tok in text.split():
            vocab.setdefault(tok, len(vocab) + 2)  # 0 = pad, 1 = OOV

    def encode(texts):
        x = np.zeros((len(texts), max_len), dtype="int32")
        for i, text in enumerate(texts):
            ids = [vocab.get(t, 1) for t in text.split()][:max_len]
            x[i, : len(ids)] = ids
        return x

    keras.utils.set_random_seed(0)
    inputs = keras.Input((max_len,), dtype="int32")
    h = layers.Embedding(len(vocab) + 2, 32)(inputs)
    h = layers.Conv1D(64, 5, padding="same", activation="relu")(h)
    h = layers.Flatten()(h)
    outputs = layers.Dense(len(task.label_names), activation="softmax")(h)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(encode(task.train_texts), task.train_labels,
              batch_size=64, epochs=6, verbose=0)
    _, acc = model.evaluate(encode(task.test_texts), task.test_labels, verbose=0)
    assert acc >= 0.85, acc


def test_document_variant_keeps_labels_and_hides_them_from_word_counts():
    import tensorflow as tf

    from keras_posattn.datasets.synthetic import ADJECTIVES
    from keras_posattn.datasets.synthetic import NEGATORS
    from keras_posattn.datasets.synthetic import as_documents
    from keras_posattn.preprocessing import split_sentences

    task = generate_position_task(num_train=200, num_test=50, seed=3)
    docs = as_documents(task, max_extra_sentences=3, seed=3)
    assert docs.train_labels.tolist() == task.train_labels.tolist()
    positions = []
    for text, doc, label in zip(task.train_texts, docs.train_texts, docs.train_labels):
        sentences = [s.decode().rstrip(".") for s in
                     split_sentences(tf.constant([doc]))[0].numpy()]
        assert 2 <= len(sentences) <= 4
        assert sentences.count(text) == 1  # the labelled sentence, intact
        positions.append(sentences.index(text))
        for other in sentences:
            if other != text:  # filler only: no key word
                assert not set(other.split()) & (set(NEGATORS) | set(ADJECTIVES))
        assert label_of(text) == label
    assert len(set(positions)) == 4  # the key sentence is anywhere
