"""The two peers every result table stands beside, measured on the same splits.

A zoo model is worth its cost only if it beats what a user would pick
instead. Two such picks, trained on the training split only (the dev split
is not used) and scored on the test split:

- ``tfidf_lr``: scikit-learn TF-IDF over word 1- and 2-grams, sublinear term
  frequencies, then ``LogisticRegression(C=10)``;
- ``fasttext_accuracy``: fastText supervised, 25 epochs, word bigrams,
  dimension 50, one thread (deterministic for a seed), learning rate 0.1
  (fastText's default), on the lower-cased training texts in a seeded random
  order; a test text with no known word gets the most frequent training class.

Both need the ``peers`` extra (``pip install keras-posattn[peers]``:
scikit-learn and fasttext-wheel); they are imported only when called.
"""

import os
import re
import tempfile

import numpy as np

INSTALL = "pip install 'keras-posattn[peers]'"


def _require(module, package):
    try:
        return __import__(module)
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(f"The peers need {package}: {INSTALL}") from e


def fit_tfidf_lr(train_texts, train_labels, seed=0):
    """TF-IDF (1-2-grams, sublinear tf) + logistic regression (C=10) fitted on
    the training texts; returns ``predict(texts) -> np.ndarray`` of labels, so
    one fit can score several sets (``tfidf_lr`` is one fit, one set)."""
    _require("sklearn", "scikit-learn")
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, lowercase=True)
    features = vectorizer.fit_transform(list(train_texts))
    classifier = LogisticRegression(C=10.0, max_iter=2000, random_state=seed)
    classifier.fit(features, np.asarray(train_labels))

    def predict(texts):
        return classifier.predict(vectorizer.transform(list(texts)))

    return predict


def tfidf_lr(train_texts, train_labels, test_texts, test_labels, seed=0):
    """Test accuracy of TF-IDF (1-2-grams, sublinear tf) + logistic regression (C=10)."""
    predicted = fit_tfidf_lr(train_texts, train_labels, seed=seed)(test_texts)
    return float(np.mean(predicted == np.asarray(test_labels)))


def _fasttext_line(text):
    return re.sub(r"\s+", " ", str(text).lower()).strip()


def fasttext_accuracy(train_texts, train_labels, test_texts, test_labels, seed=0, epochs=25,
                      dim=50, word_ngrams=2):
    """Test accuracy of fastText supervised (25 epochs, bigrams, dim 50, one thread)."""
    fasttext = _require("fasttext", "fasttext (fasttext-wheel)")
    # fastText reads its file in order: a file sorted by class (MR's, MPQA's)
    # would train it on one class, then the other. Shuffle it (seeded).
    order = np.random.default_rng(seed).permutation(len(train_texts))
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "train.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(f"__label__{int(train_labels[i])} {_fasttext_line(train_texts[i])}\n"
                         for i in order)
        model = fasttext.train_supervised(input=path, epoch=epochs, dim=dim,
                                          wordNgrams=word_ngrams, thread=1, seed=int(seed),
                                          verbose=0)
    # A text with no known word (or bigram) gets no prediction from fastText;
    # it is given the most frequent training class rather than crashing.
    values, counts = np.unique(np.asarray(train_labels), return_counts=True)
    majority = int(values[np.argmax(counts)])
    predicted = []
    for text in test_texts:
        # model.f.predict, not model.predict: fasttext 0.9.2's wrapper breaks on NumPy 2.
        best = model.f.predict(_fasttext_line(text), 1, 0.0, "strict")
        predicted.append(int(best[0][1].replace("__label__", "")) if best else majority)
    return float(np.mean(np.asarray(predicted) == np.asarray(test_labels)))


def peer_accuracies(splits, seed=0):
    """``{"tfidf_lr": ..., "fasttext": ...}`` on a ``Splits`` (train -> test)."""
    args = (splits.train.texts, splits.train.labels, splits.test.texts, splits.test.labels)
    return {"tfidf_lr": tfidf_lr(*args, seed=seed),
            "fasttext": fasttext_accuracy(*args, seed=seed)}
