"""In-domain word vectors: subword-aware vectors trained on the task's own texts.

``--embeddings domain-skipgram-100d`` (issue 27) trains fastText-style vectors
(skip-gram or CBOW over words and their character 3- to 6-grams, with gensim's
``FastText``) on the training texts, plus an optional unlabeled file, before
the classifier trains; ``+glove-6b-50d`` concatenates GloVe 50d to them.

Spec names (case-insensitive), parsed by :func:`parse_spec`::

    domain                              skip-gram, 100d
    domain-cbow                         CBOW, 100d
    domain-300d                         skip-gram, 300d
    domain-skipgram-100d                (also ``domain-sg-100d``)
    domain-skipgram-100d-20ep           20 epochs instead of the automatic number
    domain-cbow-300d+glove-6b-50d       CBOW 300d, GloVe 50d concatenated: 350d
    domain-skipgram-100d+vectors.txt    ... or any GloVe / word2vec text file

Training (:func:`train_domain_vectors`) is seeded and, with one worker (the
default), identical from one process to the next; its result is cached under
a key made of the texts' content hash, every training parameter, the seed and
the gensim version, so a second run on the same texts loads the vectors
instead of training. The caller tokenises (pass the classifier's
preprocessor's own tokens, so that vocabulary and vectors agree); nothing
here imports TensorFlow. gensim is imported only when vectors are trained or
a subword vector is computed (``pip install 'keras-posattn[domain]'``).

Defaults (:class:`DomainSpec`) are fastText's unsupervised ones (window 5,
5 negative samples, learning rate 0.05 for skip-gram and CBOW alike, char
n-grams 3-6, 2,000,000 n-gram buckets) except where the task's texts, small
corpora, need otherwise:

* ``min_count=2`` (fastText: 5, which would drop most of a small set's
  words): a word seen once learns little from its one context, so such words
  (they are in the classifier's vocabulary) get their vector from their
  character n-grams, like an unseen word;
* sub-sampling ``1e-3`` (word2vec's and gensim's; fastText: 1e-4, which
  keeps about ``sqrt(1e-4 / f)`` of a word of frequency ``f``: on a small
  corpus most words are "frequent", and on a generated 13,000-token corpus
  it left words that share contexts no closer than words that don't);
* epochs chosen from the corpus size when the spec names none (fastText:
  5): ``ceil(10,000,000 / tokens)`` within 5-20, so 5 for IMDB's 25,000
  reviews (6M tokens), 10 for 4,500 of them and 20 for SST-2 and TREC. On
  dev splits (logistic regression on mean vectors,
  ``benchmarks/domain_vectors_dev.py``) 5 epochs left small sets' vectors far
  behind: TREC 56.5% at 5 epochs, 64.6% at 10, 70.6% at 20, 69.2% at 50;
  SST-2 68.6%, 75.5% at 20, 76.4% at 50; 4,500 IMDB reviews 82.0%, 83.0%
  at 10, 83.8% at 20;
* skip-gram and 100d when not named: skip-gram beat CBOW on TREC's dev
  split (70.6% against 65.5% at 20 epochs, the probe), and 300d was not
  clearly better than 100d (TREC 69.2% against 70.6%, SST-2 77.6% against
  75.5%, dev splits of 545 and 872 texts) at three times the memory.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
import warnings
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable, Sequence, Union

import numpy as np

from keras_posattn.datasets.readers import DataFormatError, _is_blank, _iter_lines, _read_text
from keras_posattn.word_vectors import WordVectors, load_word_vectors

__all__ = [
    "DomainSpec",
    "DomainVectors",
    "parse_spec",
    "train_domain_vectors",
    "combine_with",
    "read_unlabeled",
    "metadata",
    "default_cache_dir",
    "INSTALL_HINT",
]

INSTALL_HINT = "pip install 'gensim>=4.3,<5' (or: pip install 'keras-posattn[domain]')"
METHODS = {"skipgram": "skipgram", "sg": "skipgram", "skip-gram": "skipgram", "cbow": "cbow"}
DIM_RANGE = (25, 600)
SPEC_FORM = (
    "domain[-skipgram|-cbow][-<dim>d][-<epochs>ep][+glove-6b-50d|+<vector file>], e.g. "
    "'domain', 'domain-cbow-300d' or 'domain-skipgram-100d+glove-6b-50d'"
)
# Epochs when the spec names none: enough passes for about AUTO_EPOCH_TOKENS
# tokens seen in all, within EPOCH_RANGE (IMDB's 6M tokens: 5; 4,500 IMDB
# reviews, 1.1M tokens: 10; SST-2's 122k and TREC's 44k: 20). Chosen on dev
# splits, see the module docstring and benchmarks/domain_vectors_dev.py.
AUTO_EPOCH_TOKENS = 10_000_000
EPOCH_RANGE = (5, 20)
CACHE_FORMAT = 1  # bump when the cache file's layout or meaning changes
# gensim's Cython loops stop a "sentence" at 10,000 words: longer texts are
# fed in pieces of this size so that no word is dropped.
_MAX_PIECE = 10_000
_SPEC_RE = re.compile(
    r"^domain(?:-(?P<method>skip-gram|skipgram|sg|cbow))?(?:-(?P<dim>[0-9]+)d)?"
    r"(?:-(?P<epochs>[0-9]+)ep)?(?:\+(?P<combine>.+))?$",
    re.IGNORECASE,
)

Progress = Union[Callable[[str], None], None]


# --------------------------------------------------------------------------
# the spec
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class DomainSpec:
    """What to train: method, dimension and the fastText parameters.

    Args:
        method: ``"skipgram"`` or ``"cbow"``.
        dim: Vector dimension (25-600).
        combine: Vectors to concatenate after the domain vectors
            (``"glove-6b-50d"`` or a GloVe / word2vec text file), or None.
        epochs: Passes over the texts; None: chosen from the corpus size
            (:meth:`resolved`): 5 for IMDB's 25,000 reviews, 20 for TREC.
        window: Context words on each side (gensim shrinks it at random per
            word, as fastText does).
        negative: Negative samples per positive one.
        sample: Sub-sampling threshold of frequent words.
        alpha: Initial learning rate (fastText's 0.05; it decays linearly to
            ``min_alpha``).
        min_count: Words seen fewer times get no vector of their own in
            training; their vector comes from their character n-grams.
        min_n, max_n: Lengths of the character n-grams (of ``<word>``).
        bucket: Hash buckets of the n-gram vectors (memory while training:
            ``bucket * dim * 4`` bytes; the cache keeps only trained rows).
    """

    method: str = "skipgram"
    dim: int = 100
    combine: str | None = None
    epochs: int | None = None
    window: int = 5
    negative: int = 5
    sample: float = 1e-3
    alpha: float = 0.05
    min_count: int = 2
    min_n: int = 3
    max_n: int = 6
    bucket: int = 2_000_000

    def __post_init__(self):
        method = METHODS.get(str(self.method).lower())
        if method is None:
            raise ValueError(f"unknown method {self.method!r}: expected 'skipgram' or 'cbow'")
        object.__setattr__(self, "method", method)
        low, high = DIM_RANGE
        if not isinstance(self.dim, int) or not low <= self.dim <= high:
            raise ValueError(
                f"domain vectors dimension {self.dim} out of range: expected {low}-{high}"
            )
        for name in ("epochs", "window", "negative", "min_count", "min_n", "bucket"):
            value = getattr(self, name)
            if name == "epochs" and value is None:
                continue
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not isinstance(self.max_n, int) or self.max_n < self.min_n:
            raise ValueError(
                f"max_n must be an integer >= min_n ({self.min_n}), got {self.max_n!r}"
            )
        if not 0 < self.alpha <= 1 or not 0 <= self.sample < 1:
            raise ValueError(
                f"need 0 < alpha <= 1 and 0 <= sample < 1, got {self.alpha}, {self.sample}"
            )

    @property
    def domain_name(self) -> str:
        """The name of the domain part, e.g. ``"domain-skipgram-100d"`` (with
        ``-20ep`` where the spec names the epochs)."""
        epochs = f"-{self.epochs}ep" if self.epochs is not None else ""
        return f"domain-{self.method}-{self.dim}d{epochs}"

    def resolved(self, tokens: int) -> "DomainSpec":
        """This spec with its epochs set: as named, or chosen for ``tokens``
        tokens of text: ``ceil(AUTO_EPOCH_TOKENS / tokens)`` within ``EPOCH_RANGE``."""
        if self.epochs is not None:
            return self
        low, high = EPOCH_RANGE
        epochs = min(high, max(low, -(-AUTO_EPOCH_TOKENS // max(1, tokens))))
        return replace(self, epochs=epochs)

    @property
    def name(self) -> str:
        """The canonical spec, e.g. ``"domain-skipgram-100d+glove-6b-50d"``."""
        return self.domain_name + (f"+{self.combine}" if self.combine else "")

    def training_params(self) -> dict:
        """Everything that shapes the trained vectors (part of the cache key)."""
        params = asdict(self)
        params.pop("combine")
        return params

    def gensim_kwargs(self) -> dict:
        """The keyword arguments of ``gensim.models.FastText`` for this spec
        (its epochs resolved: :meth:`resolved`)."""
        if self.epochs is None:
            raise ValueError("resolve the epochs first: spec.resolved(number_of_tokens)")
        return dict(
            vector_size=self.dim, sg=1 if self.method == "skipgram" else 0, hs=0,
            window=self.window, negative=self.negative, sample=self.sample,
            alpha=self.alpha, min_count=self.min_count, min_n=self.min_n,
            max_n=self.max_n, bucket=self.bucket, epochs=self.epochs, sorted_vocab=1,
        )


def parse_spec(spec) -> DomainSpec | None:
    """Recognise an ``--embeddings`` value that asks for in-domain vectors.

    Args:
        spec: ``"domain"``, ``"domain-cbow-300d"``,
            ``"domain-skipgram-100d+glove-6b-50d"``, ... (see the module
            docstring), or a :class:`DomainSpec` (returned as is).

    Returns:
        A :class:`DomainSpec`, or None when ``spec`` is not a domain spec
        (another vectors name, a path to an existing file, None): the caller
        then loads it with ``word_vectors.load_word_vectors``.

    Raises:
        ValueError: ``spec`` starts as a domain spec (``domain-...`` or
            ``domain+...``) but a part is unknown or the dimension is out of
            range; one line naming the accepted form.
    """
    if isinstance(spec, DomainSpec):
        return spec
    if not isinstance(spec, str):
        return None
    text = spec.strip()
    lowered = text.lower()
    if not (lowered == "domain" or lowered.startswith(("domain-", "domain+"))):
        return None
    if Path(text).is_file():
        return None  # a vector file that happens to be called domain-...
    match = _SPEC_RE.match(text)
    if match is None:
        raise ValueError(f"unknown domain vectors spec {spec!r}: expected {SPEC_FORM}")
    method = METHODS[(match["method"] or "skipgram").lower()]
    dim = int(match["dim"]) if match["dim"] else DomainSpec.dim
    epochs = int(match["epochs"]) if match["epochs"] else None
    if epochs == 0:
        raise ValueError(
            f"domain vectors spec {spec!r}: 0 epochs; the accepted form is {SPEC_FORM}"
        )
    combine = match["combine"].strip() if match["combine"] else None
    if combine is not None and (not combine or combine.lower().startswith("domain")):
        raise ValueError(
            f"domain vectors spec {spec!r}: after '+' expected GloVe vectors (a name such as "
            f"glove-6b-50d, or a vector file); the accepted form is {SPEC_FORM}"
        )
    if combine is not None and combine.lower() == "glove-6b-50d":
        combine = "glove-6b-50d"
    low, high = DIM_RANGE
    if not low <= dim <= high:
        raise ValueError(
            f"domain vectors spec {spec!r}: dimension {dim} out of range, expected "
            f"{low}-{high} (e.g. domain-skipgram-100d)"
        )
    return DomainSpec(method=method, dim=dim, epochs=epochs, combine=combine)


# --------------------------------------------------------------------------
# the vectors
# --------------------------------------------------------------------------


@dataclass(repr=False, eq=False)
class DomainVectors(WordVectors):
    """:class:`~keras_posattn.word_vectors.WordVectors` with subword vectors for any word.

    ``words`` / ``vectors`` hold every word of the training texts (and the
    unlabeled texts' words seen ``min_count`` times); :meth:`vector` also
    answers words never seen, from their character n-grams. With GloVe
    combined, each row is ``[domain vector, GloVe vector or zeros]``.

    Args:
        info: What the vectors are (see :func:`metadata`).
    """

    info: dict = field(default_factory=dict)
    _subwords: dict | None = field(default=None, compare=False)
    _glove: WordVectors | None = field(default=None, compare=False)

    @property
    def domain_dim(self) -> int:
        """The dimension of the domain part (``dim`` minus GloVe's)."""
        return self.dim - (self._glove.dim if self._glove is not None else 0)

    def subword_vector(self, word: str) -> np.ndarray:
        """The domain vector of ``word`` from its character n-grams alone.

        The mean of the trained vectors of its n-grams' hash buckets (as
        gensim's ``FastTextKeyedVectors`` for an unseen word, except that
        buckets no trained word's n-gram reached, which gensim would add as
        their random initial values, are left out); zeros when none of its
        n-grams was trained.
        """
        sub = self._subwords
        out = np.zeros(self.domain_dim, dtype=np.float32)
        if sub is None or not len(sub["buckets"]):
            return out
        hashes = _ngram_hashes(word, sub["min_n"], sub["max_n"], sub["bucket"])
        if not len(hashes):
            return out
        buckets = sub["buckets"]
        pos = np.searchsorted(buckets, hashes)
        pos_clipped = np.minimum(pos, len(buckets) - 1)
        found = pos_clipped[buckets[pos_clipped] == hashes]
        if not len(found):
            return out
        return sub["ngram_vectors"][found].mean(axis=0, dtype=np.float32)

    def vector(self, word: str) -> np.ndarray:
        """The vector of any word: its row if it has one, else built from subwords.

        With GloVe combined, the GloVe part is GloVe's vector of the word (or
        of its lowercase) or zeros.
        """
        row = self.index.get(word)
        if row is not None:
            return np.asarray(self.vectors[row])
        domain = self.subword_vector(word)
        if self._glove is None:
            return domain
        return np.concatenate([domain, _glove_row(self._glove, word)])

    def __repr__(self) -> str:
        return f"DomainVectors(name={self.name!r}, words={len(self.words)}, dim={self.dim})"


def _glove_row(glove: WordVectors, word: str) -> np.ndarray:
    found = glove.get(word)
    if found is None and word.lower() != word:
        found = glove.get(word.lower())
    if found is None:
        return np.zeros(glove.dim, dtype=np.float32)
    return np.asarray(found, dtype=np.float32)


def _ngram_hashes(word, min_n, max_n, bucket) -> np.ndarray:
    from gensim.models.fasttext import ft_ngram_hashes

    return np.asarray(ft_ngram_hashes(word, min_n, max_n, bucket), dtype=np.int64)


def combine_with(domain: DomainVectors, glove: WordVectors) -> DomainVectors:
    """Concatenate GloVe vectors to domain vectors, word by word.

    Each of the domain vectors' words gets ``[domain vector, GloVe vector]``;
    a word GloVe lacks (exact match, then lowercase, as
    ``build_embedding_matrix`` looks words up) gets zeros in the GloVe part,
    so a classifier fine-tuning its embeddings starts it at the origin
    rather than at noise. Words only GloVe has are not added: the
    classifier's vocabulary comes from the training texts.

    Args:
        domain: From :func:`train_domain_vectors` (not already combined).
        glove: Any :class:`WordVectors` (e.g. ``load_word_vectors("glove-6b-50d")``).

    Returns:
        A :class:`DomainVectors` of dimension ``domain.dim + glove.dim``.
    """
    if domain._glove is not None:
        raise ValueError(f"{domain.name} is already combined with {domain._glove.name}")
    glove_part = np.zeros((len(domain.words), glove.dim), dtype=np.float32)
    index = glove.index
    found = 0
    for row, word in enumerate(domain.words):
        source = index.get(word)
        if source is None and word.lower() != word:
            source = index.get(word.lower())
        if source is not None:
            glove_part[row] = glove.vectors[source]
            found += 1
    vectors = np.concatenate([np.asarray(domain.vectors, dtype=np.float32), glove_part], axis=1)
    coverage = found / len(domain.words) if domain.words else 0.0
    info = dict(domain.info)
    spec = f"{info.get('spec', domain.name.split(' ')[0])}+{glove.name}"
    info.update(spec=spec, dim=int(vectors.shape[1]), combined_with=glove.name,
                combined_dim=glove.dim, combined_coverage=round(coverage, 4))
    name = f"{spec} ({_describe(info)}; {glove.name} for {coverage:.1%} of the words)"
    return DomainVectors(words=list(domain.words), vectors=vectors, name=name, info=info,
                         _subwords=domain._subwords, _glove=glove)


def metadata(vectors_or_spec) -> dict:
    """A JSON-ready record of what the vectors are, for ``result.json``,
    ``reproduce`` records and the export metadata.

    Args:
        vectors_or_spec: A :class:`DomainVectors` (everything below), or a
            spec (string or :class:`DomainSpec`: only what it names).

    Returns:
        For vectors: ``spec``, ``method``, ``dim`` (with GloVe's),
        ``domain_dim``, ``library`` and ``library_version``, ``texts``,
        ``unlabeled_texts``, ``tokens``, ``words`` (rows), ``trained_words``
        (words with their own vector), ``seed``, ``workers``, ``params``,
        ``content_sha256``, ``cache_key``, ``cache_file``, ``from_cache``,
        ``train_seconds``; with GloVe also ``combined_with``,
        ``combined_dim`` and ``combined_coverage``.
    """
    if isinstance(vectors_or_spec, DomainVectors):
        return json.loads(json.dumps(vectors_or_spec.info))
    spec = parse_spec(vectors_or_spec)
    if spec is None:
        raise ValueError(f"{vectors_or_spec!r} is not a domain vectors spec ({SPEC_FORM})")
    return {"spec": spec.name, "method": spec.method, "dim": spec.dim, "library": "gensim",
            "params": spec.training_params(), "combined_with": spec.combine}


def _describe(info: dict) -> str:
    return (f"{info['library']} {info['library_version']}, {info['texts']:,} texts + "
            f"{info['unlabeled_texts']:,} unlabeled, key {info['cache_key'][:8]}")


# --------------------------------------------------------------------------
# training and the cache
# --------------------------------------------------------------------------


def default_cache_dir() -> Path:
    """``$KERAS_POSATTN_CACHE/domain_vectors``, else ``~/.cache/keras_posattn/domain_vectors``
    (``$XDG_CACHE_HOME`` instead of ``~/.cache`` where set)."""
    from keras_posattn.utils import cache_root

    return cache_root() / "domain_vectors"


def content_hash(token_lists: Iterable[Sequence[str]]) -> tuple[str, int, int]:
    """SHA-256 of tokenised texts, with the number of texts and tokens.

    Each text is hashed as its JSON list (ASCII-escaped) and a newline, so
    the digest changes with any token, any boundary between tokens or texts,
    and the order; it does not depend on Python's randomised ``hash()``.
    """
    digest = hashlib.sha256()
    texts = tokens = 0
    for tokens_of_text in token_lists:
        tokens_of_text = list(tokens_of_text)
        digest.update(json.dumps(tokens_of_text).encode("ascii"))
        digest.update(b"\n")
        texts += 1
        tokens += len(tokens_of_text)
    return digest.hexdigest(), texts, tokens


def _stable_hash(text) -> int:
    """A ``hash()`` that is the same in every process (gensim's ``hashfxn``)."""
    data = str(text).encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


def _gensim():
    try:
        import gensim
        from gensim.models import FastText
        from gensim.models.callbacks import CallbackAny2Vec
    except ImportError:
        raise ImportError(f"domain word vectors need gensim: {INSTALL_HINT}") from None
    return gensim.__version__, FastText, CallbackAny2Vec


def train_domain_vectors(
    token_lists: Sequence[Sequence[str]],
    spec="domain",
    seed: int = 1234,
    cache_dir: Union[str, Path, None] = None,
    unlabeled_token_lists: Sequence[Sequence[str]] | None = None,
    progress: Progress = print,
    workers: int = 1,
    cache: bool = True,
) -> DomainVectors:
    """Train (or load from the cache) subword-aware vectors on tokenised texts.

    gensim's ``FastText`` trains on the training texts and the unlabeled
    ones together, in one seeded random order (the same every epoch), with
    ``workers`` threads. With one worker the vectors depend only on the
    texts, the spec and the seed: the same in every process. Words of the
    training texts seen fewer than ``min_count`` times, which get no vector
    of their own in training, get their subword vector
    (:meth:`DomainVectors.subword_vector`), so every training word has a row.

    Args:
        token_lists: The training texts, tokenised as the classifier's
            preprocessor tokenises (e.g. ``preprocessor.tokenize(texts)``).
        spec: A spec string (:func:`parse_spec`) or :class:`DomainSpec`.
            With ``+glove...`` the GloVe vectors are loaded and concatenated
            (:func:`combine_with`).
        seed: gensim's seed and the seed of the order of the texts.
        cache_dir: Folder of the cache (default :func:`default_cache_dir`).
        unlabeled_token_lists: More texts to train on (e.g. from
            :func:`read_unlabeled`, tokenised the same way).
        progress: Called with one line per step (``print`` by default,
            None for silence): the start, each epoch, the cache.
        workers: gensim worker threads. More than one is faster but not
            reproducible (gensim's threads race); it is part of the cache key.
        cache: Look the vectors up in the cache and save them there.

    Returns:
        A :class:`DomainVectors` (float32, one row per word).

    Raises:
        ImportError: gensim is missing (the message says what to install).
        ValueError: A bad spec, no texts, or no word seen ``min_count`` times.
    """
    parsed = parse_spec(spec)
    if parsed is None:
        raise ValueError(f"{spec!r} is not a domain vectors spec: expected {SPEC_FORM}")
    if not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    say = progress or (lambda line: None)
    train = [list(t) for t in token_lists]
    unlabeled = [list(t) for t in (unlabeled_token_lists or [])]
    if not any(train) and not any(unlabeled):
        raise ValueError("domain vectors need texts to train on; every text is empty")
    version, _, _ = _gensim()
    train_sha, n_train, n_tokens = content_hash(train)
    unlabeled_sha, n_unlabeled, n_unlabeled_tokens = content_hash(unlabeled)
    # the epochs are resolved before the key: "auto" and the same number named share it
    trained_spec = parsed.resolved(n_tokens + n_unlabeled_tokens)
    params = trained_spec.training_params()
    key_source = {"format": CACHE_FORMAT, "gensim": version, "params": params, "seed": seed,
                  "workers": workers, "train": train_sha, "unlabeled": unlabeled_sha}
    key = hashlib.sha256(json.dumps(key_source, sort_keys=True).encode()).hexdigest()
    info = {
        "spec": parsed.domain_name, "method": parsed.method, "dim": parsed.dim,
        "domain_dim": parsed.dim,
        "library": "gensim", "library_version": version, "texts": n_train,
        "unlabeled_texts": n_unlabeled, "tokens": n_tokens + n_unlabeled_tokens,
        "seed": seed, "workers": workers, "params": params,
        "content_sha256": {"train": train_sha, "unlabeled": unlabeled_sha},
        "cache_key": key,
    }
    # GloVe first: a missing package or file should not wait for the training.
    glove = load_word_vectors(parsed.combine) if parsed.combine else None
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    path = folder / f"domain-{parsed.method}-{parsed.dim}d-{key[:16]}.npz"
    vectors = _load_cache(path, key, parsed.domain_name, say) if cache else None
    if vectors is None:
        vectors = _train(train, unlabeled, trained_spec, seed, workers, info, say)
        vectors.info["cache_file"] = None
        if cache:
            _save_cache(path, vectors, say)
    if glove is not None:
        vectors = combine_with(vectors, glove)
        say(f"Domain vectors: concatenated {vectors._glove.name} ({vectors._glove.dim}d) for "
            f"{vectors.info['combined_coverage']:.1%} of the words (zeros elsewhere): "
            f"{vectors.dim}d.")
    return vectors


def _corpus(train, unlabeled, seed) -> list[list[str]]:
    pieces = [text[i:i + _MAX_PIECE] for text in train + unlabeled
              for i in range(0, len(text), _MAX_PIECE)]
    order = np.random.default_rng(seed).permutation(len(pieces))
    return [pieces[i] for i in order]


def _train(train, unlabeled, spec, seed, workers, info, say) -> DomainVectors:
    _, FastText, CallbackAny2Vec = _gensim()
    corpus = _corpus(train, unlabeled, seed)
    started = time.time()

    class EpochLines(CallbackAny2Vec):
        def __init__(self):
            self.epoch = 0

        def on_epoch_end(self, model):
            self.epoch += 1
            say(f"Domain vectors: epoch {self.epoch}/{spec.epochs} "
                f"({time.time() - started:.0f} s)")

    model = FastText(**spec.gensim_kwargs(), seed=seed, workers=workers, hashfxn=_stable_hash)
    model.build_vocab(corpus_iterable=corpus)
    wv = model.wv
    if not len(wv.index_to_key):
        raise ValueError(f"domain vectors: no word occurs min_count={spec.min_count} times "
                         "in the texts")
    say(f"Domain vectors: training {info['spec']} ({spec.epochs} epochs) on "
        f"{info['texts']:,} texts + {info['unlabeled_texts']:,} unlabeled "
        f"({info['tokens']:,} tokens, "
        f"{len(wv.index_to_key):,} words seen {spec.min_count}+ times; gensim "
        f"{info['library_version']}, {workers} worker{'s' if workers > 1 else ''}, "
        f"seed {seed}) ...")
    model.train(corpus_iterable=corpus, total_examples=len(corpus), epochs=spec.epochs,
                callbacks=[EpochLines()])
    trained_words = list(wv.index_to_key)
    matrix = np.asarray(wv.vectors, dtype=np.float32)
    buckets = np.unique(np.concatenate([np.asarray(b, dtype=np.int64) for b in wv.buckets_word]))
    subwords = {"min_n": spec.min_n, "max_n": spec.max_n, "bucket": spec.bucket,
                "buckets": buckets,
                "ngram_vectors": np.asarray(wv.vectors_ngrams[buckets], dtype=np.float32)}
    vectors = DomainVectors(words=trained_words, vectors=matrix, name="", _subwords=subwords)
    known = set(trained_words)
    rare = [w for w in dict.fromkeys(w for text in train for w in text) if w not in known]
    if rare:
        matrix = np.concatenate([matrix, np.stack([vectors.subword_vector(w) for w in rare])])
    info = dict(info, words=len(trained_words) + len(rare), trained_words=len(trained_words),
                train_seconds=round(time.time() - started, 1), from_cache=False)
    return _finish(trained_words + rare, matrix, info, subwords)


def _finish(words, matrix, info, subwords) -> DomainVectors:
    name = f"{info['spec']} ({_describe(info)})"
    return DomainVectors(words=words, vectors=matrix, name=name, info=info, _subwords=subwords)


def _json_bytes(obj) -> np.ndarray:
    return np.frombuffer(json.dumps(obj).encode("utf-8"), dtype=np.uint8)


def _save_cache(path: Path, vectors: DomainVectors, say) -> None:
    """Write the cache file atomically: a temporary file in the same folder, then rename."""
    info = dict(vectors.info, cache_file=str(path))
    sub = vectors._subwords
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as handle:
            np.savez(handle, words=_json_bytes(vectors.words), vectors=vectors.vectors,
                     buckets=sub["buckets"], ngram_vectors=sub["ngram_vectors"],
                     info=_json_bytes(info))
        os.replace(tmp, path)
    except OSError as err:
        warnings.warn(f"domain vectors: could not write the cache {path}: {err}", stacklevel=3)
        return
    vectors.info["cache_file"] = str(path)
    size = path.stat().st_size / 2**20
    say(f"Domain vectors: saved to the cache {path} ({size:,.0f} MiB).")


def _load_cache(path: Path, key: str, spec_name: str, say) -> DomainVectors | None:
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            info = json.loads(data["info"].tobytes().decode("utf-8"))
            words = json.loads(data["words"].tobytes().decode("utf-8"))
            matrix = np.asarray(data["vectors"], dtype=np.float32)
            buckets = np.asarray(data["buckets"], dtype=np.int64)
            ngram_vectors = np.asarray(data["ngram_vectors"], dtype=np.float32)
        if info.get("cache_key") != key:
            raise ValueError("its key does not match its name")
        params = info["params"]
        if (matrix.ndim != 2 or matrix.shape != (len(words), info["dim"])
                or ngram_vectors.shape != (len(buckets), info["dim"])):
            raise ValueError("its arrays' shapes do not match")
    except Exception as err:  # a truncated / foreign / corrupted file: train again
        warnings.warn(f"domain vectors: discarding the unreadable cache file {path} "
                      f"({type(err).__name__}: {err}); training again", stacklevel=3)
        try:
            path.unlink()
        except OSError:
            pass
        return None
    # the spec as asked for now ("domain-skipgram-100d-5ep" and an automatic
    # 5 epochs share the file)
    info.update(spec=spec_name, from_cache=True, cache_file=str(path))
    subwords = {"min_n": params["min_n"], "max_n": params["max_n"], "bucket": params["bucket"],
                "buckets": buckets, "ngram_vectors": ngram_vectors}
    vectors = _finish(words, matrix, info, subwords)
    say(f"Domain vectors: {info['spec']} loaded from the cache {path} ({len(words):,} words, "
        f"trained in {info['train_seconds']:.0f} s; key {key[:8]}).")
    return vectors


# --------------------------------------------------------------------------
# unlabeled texts
# --------------------------------------------------------------------------


def read_unlabeled(path: Union[str, Path], encoding: str = "utf-8") -> list[str]:
    """Read unlabeled texts for :func:`train_domain_vectors` (``--unlabeled``).

    Formats, by suffix:

    * ``.jsonl`` / ``.ndjson``: one JSON object per line with a string
      ``"text"`` (other keys, such as a label, are ignored);
    * ``.tsv``: the last tab-separated column of each line (so a labelled
      ``label<TAB>text`` file works too);
    * anything else: one text per line;
    * a folder: every ``*.txt`` file in it is one text, in name order (IMDB's
      ``aclImdb/train/unsup``).

    Lines split on ``"\\n"`` only; blank lines are skipped.

    Args:
        path: The file or folder.
        encoding: As for ``read_texts`` (``"auto"`` falls back to cp1252).

    Returns:
        The texts, in file order.

    Raises:
        FileNotFoundError: No such file or folder (one line, with the formats).
        DataFormatError: A bad line (``file:line: reason``) or undecodable bytes.
    """
    path = Path(path)
    if path.is_dir():
        files = sorted(path.glob("*.txt"))
        if not files:
            raise FileNotFoundError(f"{path}: a folder without *.txt files (--unlabeled)")
        return [_read_text(f, encoding)[0].replace("\n", " ").strip() for f in files]
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: no such file (--unlabeled takes a text file with one text per line, "
            "a .jsonl file with a 'text' field, a .tsv file (last column), or a folder of "
            ".txt files)"
        )
    text, _ = _read_text(path, encoding)
    suffix = path.suffix.lower()
    texts = []
    for number, line in _iter_lines(text):
        if _is_blank(line):
            continue
        if suffix in (".jsonl", ".ndjson"):
            texts.append(_jsonl_text(path, number, line))
        elif suffix == ".tsv":
            texts.append(line.rsplit("\t", 1)[-1])
        else:
            texts.append(line)
    if not texts:
        raise DataFormatError(path, None, "no texts in the file (--unlabeled)")
    return texts


def _jsonl_text(path, number, line) -> str:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as err:
        raise DataFormatError(
            path, number, f"invalid JSON: {err.msg} (column {err.colno})"
        ) from None
    if not isinstance(obj, dict):
        raise DataFormatError(path, number, f"expected a JSON object, found {type(obj).__name__}")
    if "text" not in obj:
        raise DataFormatError(path, number, f"missing key 'text'; keys are {sorted(obj)}")
    if not isinstance(obj["text"], str):
        raise DataFormatError(
            path, number, f"'text' must be a string, found {type(obj['text']).__name__}"
        )
    return obj["text"]
