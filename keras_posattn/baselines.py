"""A unigram bag-of-words baseline in plain numpy.

Multinomial logistic regression on unigram counts (``log1p``-scaled, sparse),
trained by full-batch gradient descent (Nesterov momentum) with L2
regularisation.  No bigrams on purpose: the point of the baseline is to show
how much of a task can be solved *without* word order.  On the embedded
position task (:mod:`keras_posattn.datasets.synthetic`) it stays at chance.

Words come from the library's one tokenizer
(:func:`keras_posattn.preprocessing.tokenize`, the models' own), or from the
``tokenizer`` given: the trainer passes its preprocessor's ``tokenize`` so the
baseline and the model read the same words.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["BagOfWordsClassifier", "bag_of_words_baseline"]


def _default_tokenizer(texts):
    from keras_posattn.preprocessing import tokenize

    return tokenize(list(texts))


class BagOfWordsClassifier:
    """Multinomial logistic regression on unigram bag-of-words counts.

    Args:
        l2: L2 penalty on the weights (not the bias).
        learning_rate: step size of full-batch gradient descent (with
            Nesterov-style momentum).
        num_iterations: number of full-batch steps.
        max_vocab: keep at most this many most frequent training words.
        seed: seed of the (small) random weight initialisation.
        tokenizer: callable turning a list of texts into a list of token
            lists (default: the library's tokenizer, as the models see text).
    """

    def __init__(
        self,
        l2: float = 1e-3,
        learning_rate: float = 0.5,
        num_iterations: int = 300,
        max_vocab: int = 20000,
        seed: int = 0,
        tokenizer=None,
    ):
        self.l2 = float(l2)
        self.learning_rate = float(learning_rate)
        self.num_iterations = int(num_iterations)
        self.max_vocab = int(max_vocab)
        self.seed = int(seed)
        self.tokenizer = tokenizer or _default_tokenizer
        self.vocabulary_: dict[str, int] | None = None
        self.classes_: np.ndarray | None = None
        self.weights_: np.ndarray | None = None
        self.bias_: np.ndarray | None = None

    # -- features ---------------------------------------------------------
    def _build_vocabulary(self, texts: Sequence[str]) -> None:
        counts: dict[str, int] = {}
        for tokens in self.tokenizer(list(texts)):
            for tok in tokens:
                counts[tok] = counts.get(tok, 0) + 1
        words = sorted(counts, key=lambda w: (-counts[w], w))[: self.max_vocab]
        self.vocabulary_ = {w: i for i, w in enumerate(words)}

    def transform(self, texts: Sequence[str]) -> "_SparseCounts":
        """Sparse ``(n, vocab)`` matrix of ``log1p`` unigram counts."""
        if self.vocabulary_ is None:
            raise RuntimeError("call fit() first")
        vocab = self.vocabulary_
        rows: list[int] = []
        cols: list[int] = []
        vals: list[float] = []
        for row, tokens in enumerate(self.tokenizer(list(texts))):
            counts: dict[int, int] = {}
            for tok in tokens:
                col = vocab.get(tok)
                if col is not None:
                    counts[col] = counts.get(col, 0) + 1
            for col in sorted(counts):
                rows.append(row)
                cols.append(col)
                vals.append(counts[col])
        return _SparseCounts(
            np.asarray(rows, dtype=np.int64),
            np.asarray(cols, dtype=np.int64),
            np.log1p(np.asarray(vals, dtype=np.float64)),
            shape=(len(texts), len(vocab)),
        )

    # -- training ---------------------------------------------------------
    def fit(self, texts: Sequence[str], labels) -> "BagOfWordsClassifier":
        labels = np.asarray(labels)
        if len(texts) != len(labels):
            raise ValueError("texts and labels differ in length")
        if len(texts) == 0:
            raise ValueError("cannot fit on zero examples")
        self._build_vocabulary(texts)
        self.classes_, y = np.unique(labels, return_inverse=True)
        x = self.transform(texts)
        n, v = x.shape
        k = len(self.classes_)
        onehot = np.zeros((n, k))
        onehot[np.arange(n), y] = 1.0
        rng = np.random.default_rng(self.seed)
        w = rng.normal(0.0, 0.01, size=(v, k))
        b = np.zeros(k)
        vw = np.zeros_like(w)
        vb = np.zeros_like(b)
        momentum = 0.9
        lr = self.learning_rate
        for _ in range(self.num_iterations):
            # Nesterov look-ahead gradient of mean cross-entropy + L2.
            wl = w + momentum * vw
            bl = b + momentum * vb
            p = _softmax(x.matmul(wl) + bl)
            g = (p - onehot) / n
            gw = x.rmatmul(g) + self.l2 * wl
            gb = g.sum(axis=0)
            vw = momentum * vw - lr * gw
            vb = momentum * vb - lr * gb
            w = w + vw
            b = b + vb
        self.weights_, self.bias_ = w, b
        return self

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        if self.weights_ is None:
            raise RuntimeError("call fit() first")
        return _softmax(self.transform(texts).matmul(self.weights_) + self.bias_)

    def predict(self, texts: Sequence[str]) -> np.ndarray:
        return self.classes_[np.argmax(self.predict_proba(texts), axis=1)]

    def score(self, texts: Sequence[str], labels) -> float:
        return float(np.mean(self.predict(texts) == np.asarray(labels)))


class _SparseCounts:
    """Minimal sparse (coordinate-format) matrix with the products fit() needs.

    Plain numpy (``bincount`` per output column) rather than BLAS: the
    products are thin (``k`` columns), where multi-threaded BLAS spends more
    time synchronising than computing, and real vocabularies would not fit
    in a dense matrix.
    """

    def __init__(self, rows, cols, vals, shape):
        self.shape = shape
        self.rows, self.cols, self.vals = rows, cols, vals

    def matmul(self, w: np.ndarray) -> np.ndarray:
        """``X @ w`` for ``w`` of shape ``(vocab, k)``."""
        n = self.shape[0]
        return np.stack(
            [
                np.bincount(self.rows, self.vals * np.take(col, self.cols), n)
                for col in np.ascontiguousarray(w.T)
            ],
            axis=1,
        ).reshape(n, w.shape[1])

    def rmatmul(self, g: np.ndarray) -> np.ndarray:
        """``X.T @ g`` for ``g`` of shape ``(n, k)``."""
        v = self.shape[1]
        return np.stack(
            [
                np.bincount(self.cols, self.vals * np.take(col, self.rows), v)
                for col in np.ascontiguousarray(g.T)
            ],
            axis=1,
        ).reshape(v, g.shape[1])


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def bag_of_words_baseline(
    train_texts: Sequence[str],
    train_labels,
    test_texts: Sequence[str],
    test_labels,
    seed: int = 0,
    **kwargs,
) -> float:
    """Test accuracy of a unigram bag-of-words logistic regression.

    Extra keyword arguments go to :class:`BagOfWordsClassifier`.
    """
    clf = BagOfWordsClassifier(seed=seed, **kwargs)
    clf.fit(list(train_texts), train_labels)
    return clf.score(list(test_texts), test_labels)
