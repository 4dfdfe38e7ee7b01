"""The peers (TF-IDF + LR, fastText) measure what they claim on small sets:
near-perfect where a word decides the label, near chance where nothing does."""

import sys

import numpy as np
import pytest

from keras_posattn import peers
from keras_posattn.datasets.splits import Split, Splits


def make_splits(informative, n=400, seed=0):
    rng = np.random.default_rng(seed)
    filler = [f"w{i}" for i in range(50)]
    labels = rng.integers(0, 3, size=n)
    cue = ["red", "green", "blue"]
    texts = []
    for label in labels:
        words = list(rng.choice(filler, size=8))
        if informative:
            words.insert(int(rng.integers(0, 9)), cue[label])
        texts.append(" ".join(words))
    if not informative:
        labels = rng.integers(0, 3, size=n)
    half = n // 2
    train = Split(texts[:half], labels[:half].astype("int32"))
    test = Split(texts[half:], labels[half:].astype("int32"))
    return Splits(train, test, test, ["a", "b", "c"], "generated")


def test_peers_learn_a_keyword_task():
    result = peers.peer_accuracies(make_splits(True))
    assert set(result) == {"tfidf_lr", "fasttext"}
    assert result["tfidf_lr"] >= 0.95, result
    assert result["fasttext"] >= 0.9, result


def test_peers_stay_near_chance_without_signal():
    result = peers.peer_accuracies(make_splits(False, n=1200))
    for name, accuracy in result.items():
        assert 0.2 <= accuracy <= 0.46, (name, accuracy)


def test_one_tfidf_lr_fit_scores_several_sets_as_separate_fits_would():
    # The noisy task, so the sets' accuracies differ and are not 1.0: scored
    # apart by one fit, two halves add up to what a fresh fit scores on both.
    s = make_splits(False, n=1200, seed=2)
    predict = peers.fit_tfidf_lr(s.train.texts, s.train.labels, seed=5)
    first, second = slice(0, 300), slice(300, 600)
    right = [int(np.sum(predict(s.test.texts[p]) == s.test.labels[p])) for p in (first, second)]
    both = peers.tfidf_lr(s.train.texts, s.train.labels, s.test.texts[:600],
                          s.test.labels[:600], seed=5)
    assert sum(right) / 600 == both < 0.6
    # It has learned the cue words of the informative task.
    s = make_splits(True)
    predict = peers.fit_tfidf_lr(s.train.texts, s.train.labels)
    assert predict(["w1 red w2", "green w3", "w4 blue"]).tolist() == [0, 1, 2]


def test_fasttext_is_deterministic_for_a_seed():
    s = make_splits(True, seed=1)
    args = (s.train.texts, s.train.labels, s.test.texts, s.test.labels)
    assert peers.fasttext_accuracy(*args, seed=3) == peers.fasttext_accuracy(*args, seed=3)


def test_fasttext_gives_unknown_texts_the_majority_class():
    train = ["good film", "good plot", "good cast", "bad film"]
    labels = np.array([1, 1, 1, 0])
    # "zzz" and "" hold no known word: fastText predicts nothing for them.
    accuracy = peers.fasttext_accuracy(train, labels, ["zzz", "", "xxx\n"], [1, 1, 0])
    assert accuracy == pytest.approx(2 / 3)


def test_missing_packages_name_the_pip_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "fasttext", None)  # import fasttext -> ImportError
    monkeypatch.setitem(sys.modules, "sklearn", None)
    s = make_splits(True)
    args = (s.train.texts, s.train.labels, s.test.texts, s.test.labels)
    with pytest.raises(ImportError, match=r"pip install 'keras-posattn\[peers\]'"):
        peers.fasttext_accuracy(*args)
    with pytest.raises(ImportError, match=r"scikit-learn: pip install"):
        peers.tfidf_lr(*args)
