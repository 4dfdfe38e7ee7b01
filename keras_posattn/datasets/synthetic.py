"""The embedded default task: a position-sensitive restaurant-review world.

``keras-posattn train mpsan`` with no data argument trains on this task.  It is
generated deterministically from a seed, needs no network and no files, and is
built so that **word order and distance decide the label while word counts say
nothing about it**.

Design
------
Every example is a short restaurant-review-like sentence (8 to 30 tokens,
lower-case, whitespace separated) that contains exactly two *key words*:

* one **negator** ``N`` drawn from ``NEGATORS`` (``not``, ``never``,
  ``hardly``, ...), and
* one **positive adjective** ``A`` drawn from ``ADJECTIVES`` (``good``,
  ``tasty``, ``friendly``, ...).

All other tokens are *filler*: a stream of short review phrases ("the soup
was", "after a while", "we sat outside", ...) over a vocabulary of about 200
words that contains neither negators nor key adjectives.  The label is
decided only by where the two key words sit relative to each other.  With ``i(w)`` the token
index of ``w`` and the distance ``d = |i(N) - i(A)|``:

====  ==========================  ===========  ===============================
id    name                        order        distance
====  ==========================  ===========  ===============================
0     ``negated-positive``        N before A   near: d <= 3 (1, 2 or 3)
1     ``contrast-positive``       N before A   far:  d >= 6
2     ``qualified-positive``      A before N   near: d <= 3
3     ``retracted-positive``      A before N   far:  d >= 6
====  ==========================  ===========  ===============================

Distances 4 and 5 never occur, so near/far is a clean margin.  Key words are
inserted only between filler phrases, never inside one.  Examples from the
default training set (``seed=1234``; key words marked here only):

* 0 ``negated-positive`` (d = 1): "the dessert was by the window for lunch our
  kids ate and *not* *tasty*"
* 1 ``contrast-positive`` (d = 8): "*barely* the soup was with some water
  though *fresh* they were anyway but"
* 2 ``qualified-positive`` (d = 3): "in the end the bread was *pleasant* for
  breakfast *not* we sat outside pretty"
* 3 ``retracted-positive`` (d = 8): "the noodles were *fresh* as expected
  anyway after a while maybe *barely*"

The filler is a random stream of phrases, so sentences read like shuffled
review fragments rather than fluent prose; that is deliberate, since any
grammar tying filler words to the key-word positions could leak the label
into the word counts.

Why the label cannot be read from a bag of words: the length, the filler
tokens (generated before the class is used), the negator and the adjective are
all sampled independently of the class; the class only chooses the distance
``d`` and which key word comes first, and then the two key words are inserted
into the filler at those positions.  So every class has exactly the same
distribution of word multisets, and a unigram bag-of-words classifier stays at
chance (25%), while a model that sees order -- a directional (backward/forward)
mask for "which comes first" and a local window (faraway mask, distance 2-3)
for "near or far" -- can learn it.  Classes are exactly balanced (up to one
example) and train and test texts are disjoint.

API
---
``generate_position_task(num_train=4000, num_test=1000, seed=1234)`` returns a
:class:`SyntheticTask`; ``write_tsv(task, directory)`` writes ``train.tsv`` and
``test.tsv`` (``label<TAB>text``, integer labels) and ``labels.txt`` (one class
name per line, in id order).  ``label_of(text)`` recomputes the label of any
sentence of this world from its key-word positions.  ``DEFAULT_SAMPLE_SENTENCE``
is a sentence of this world (label ``DEFAULT_SAMPLE_LABEL``) that is not in the
default training set.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

__all__ = [
    "ADJECTIVES",
    "DEFAULT_SAMPLE_LABEL",
    "DEFAULT_SAMPLE_SENTENCE",
    "FAR_MIN_DISTANCE",
    "FILLER_VOCABULARY",
    "LABEL_NAMES",
    "MAX_LENGTH",
    "MIN_LENGTH",
    "NEAR_MAX_DISTANCE",
    "NEGATORS",
    "SyntheticTask",
    "DEFAULT_SAMPLE_DOCUMENT",
    "as_documents",
    "generate_position_task",
    "label_of",
    "write_tsv",
]

LABEL_NAMES: list[str] = [
    "negated-positive",  # negator shortly before the adjective
    "contrast-positive",  # negator long before the adjective
    "qualified-positive",  # adjective shortly before the negator
    "retracted-positive",  # adjective long before the negator
]

NEGATORS: tuple[str, ...] = (
    "not",
    "never",
    "hardly",
    "barely",
    "scarcely",
    "seldom",
)

ADJECTIVES: tuple[str, ...] = (
    "good",
    "great",
    "tasty",
    "fresh",
    "friendly",
    "lovely",
    "delicious",
    "excellent",
    "pleasant",
    "clean",
    "cozy",
    "generous",
)

MIN_LENGTH = 8
MAX_LENGTH = 30
NEAR_MAX_DISTANCE = 3
FAR_MIN_DISTANCE = 6

# Filler phrases: review-like chunks with no negator and no key adjective.
# Key words are only ever inserted *between* phrases, never inside one.
_FILLER_PHRASES: tuple[str, ...] = (
    # clause openings that read well before an adjective
    "the soup was", "the pasta was", "the pizza was", "the salad was",
    "the bread was", "the dessert was", "the coffee was", "the wine was",
    "the steak was", "the fish was", "the curry was", "the cake was",
    "the noodles were", "the fries were", "the portions were",
    "the prices were", "the staff seemed", "the waiter seemed",
    "our server seemed", "the owner seemed", "the room felt",
    "the patio felt", "the place looked", "the tea tasted",
    "the sauce tasted", "the chicken smelled", "everything was",
    "it was", "it looked", "it felt", "they were", "the music was",
    "the lighting was", "the table was", "the menu looked",
    # short connectors and hedges
    "and", "but", "so", "then", "also", "really", "very", "quite",
    "too", "still", "even", "always", "though", "pretty", "a bit",
    "kind of", "at all", "overall", "honestly", "maybe", "anyway",
    "to me", "for us", "as usual", "as expected", "of course",
    "i think", "to be honest", "in general", "in the end", "at first",
    # context
    "after a while", "later that night", "on a friday", "on the weekend",
    "before the show", "after work", "for lunch", "for dinner",
    "for breakfast", "around noon", "last month", "this year",
    "every time", "ten minutes later", "after two hours",
    "near the station", "by the river", "in the old town", "downtown",
    "next to the park", "across the street", "on the corner",
    "we sat outside", "we sat inside", "by the window", "near the door",
    "the line was long", "a small crowd waited", "the parking lot was full",
    "the waiter came over", "the chef walked past", "the host said hello",
    "our server took our order", "the bartender smiled at us",
    "the manager asked about drinks", "the cook brought the menu",
    "we ordered the curry", "i ordered the steak", "my sister had the fish",
    "my friend had the burger", "we shared a pizza", "they served rice",
    "she recommended the noodles", "he suggested the wine",
    "with extra cheese", "with the bill", "with some water",
    "on the side", "from the oven", "from the kitchen", "for the table",
    "my parents came along", "our kids ate", "a group of six",
    "the whole family", "we paid in cash", "the tip was included",
    "we paid by card", "we will come back", "we might return",
    "i told my friends", "we left early", "we stayed late",
)


def _filler_vocabulary() -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for phrase in _FILLER_PHRASES:
        for word in phrase.split():
            seen.setdefault(word, None)
    return tuple(seen)


FILLER_VOCABULARY: tuple[str, ...] = _filler_vocabulary()

_KEYWORDS = frozenset(NEGATORS) | frozenset(ADJECTIVES)
assert not _KEYWORDS & set(FILLER_VOCABULARY), "filler must not contain key words"

_PHRASE_TOKENS: tuple[tuple[str, ...], ...] = tuple(
    tuple(p.split()) for p in _FILLER_PHRASES
)


@dataclasses.dataclass
class SyntheticTask:
    """A generated train/test split of the position task."""

    train_texts: list[str]
    train_labels: np.ndarray
    test_texts: list[str]
    test_labels: np.ndarray
    label_names: list[str]
    description: str

    @property
    def num_classes(self) -> int:
        return len(self.label_names)


def _filler(rng: np.random.Generator) -> tuple[list[str], list[int]]:
    """A class-independent filler: tokens and the phrase boundaries in them.

    Boundaries are token offsets ``0 <= b <= len(tokens)`` where a key word may
    be inserted.  The filler is redrawn until it admits every class (a pair of
    boundaries 0, 1 and 2 tokens apart and one at least 5 apart), so its
    distribution does not depend on the label.
    """
    lo, hi = MIN_LENGTH - 2, MAX_LENGTH - 2
    while True:
        target = int(rng.integers(lo, hi + 1))
        tokens: list[str] = []
        bounds = [0]
        while len(tokens) < target:
            tokens.extend(_PHRASE_TOKENS[int(rng.integers(len(_PHRASE_TOKENS)))])
            bounds.append(len(tokens))
        if len(tokens) > hi:
            continue
        gaps = {b2 - b1 for b1 in bounds for b2 in bounds if b2 >= b1}
        if {1, 2} <= gaps and max(gaps) >= FAR_MIN_DISTANCE - 1:
            return tokens, bounds


def _make_example(rng: np.random.Generator, label: int) -> str:
    # The filler, the negator and the adjective are drawn first and
    # independently of the label; the label only decides where the two key
    # words go (which one first, how many filler tokens between them).
    filler, bounds = _filler(rng)
    negator = NEGATORS[int(rng.integers(len(NEGATORS)))]
    adjective = ADJECTIVES[int(rng.integers(len(ADJECTIVES)))]
    near = label in (0, 2)
    negator_first = label in (0, 1)
    if near:
        # key-word distance d = gap + 1 in {1, 2, 3}, each equally likely
        gap = int(rng.integers(0, NEAR_MAX_DISTANCE))
        pairs = [(b1, b1 + gap) for b1 in bounds if b1 + gap in bounds]
    else:
        pairs = [
            (b1, b2)
            for b1 in bounds
            for b2 in bounds
            if b2 - b1 >= FAR_MIN_DISTANCE - 1
        ]
    b1, b2 = pairs[int(rng.integers(len(pairs)))]
    first, second = (negator, adjective) if negator_first else (adjective, negator)
    tokens = filler[:b1] + [first] + filler[b1:b2] + [second] + filler[b2:]
    return " ".join(tokens)


def label_of(text: str) -> int:
    """The label of a sentence of this world, from its key-word positions.

    Raises ``ValueError`` if the sentence does not contain exactly one negator
    and one key adjective, or if their distance is 4 or 5 (undefined).
    """
    tokens = text.lower().split()
    neg = [i for i, t in enumerate(tokens) if t in NEGATORS]
    adj = [i for i, t in enumerate(tokens) if t in ADJECTIVES]
    if len(neg) != 1 or len(adj) != 1:
        raise ValueError(
            f"expected exactly one negator and one key adjective in {text!r}"
        )
    d = abs(neg[0] - adj[0])
    if d <= NEAR_MAX_DISTANCE:
        near = True
    elif d >= FAR_MIN_DISTANCE:
        near = False
    else:
        raise ValueError(f"key-word distance {d} is neither near nor far")
    if neg[0] < adj[0]:
        return 0 if near else 1
    return 2 if near else 3


def _balanced_labels(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    labels = np.arange(n, dtype=np.int32) % k
    rng.shuffle(labels)
    return labels


def generate_position_task(
    num_train: int = 4000, num_test: int = 1000, seed: int = 1234
) -> SyntheticTask:
    """Generate the position-sensitive review task (see module docstring).

    The same ``seed`` gives byte-identical output; texts are unique across and
    within splits; classes are balanced to within one example.
    """
    if num_train < 0 or num_test < 0:
        raise ValueError("num_train and num_test must be non-negative")
    rng = np.random.default_rng(seed)
    k = len(LABEL_NAMES)
    seen: set[str] = {DEFAULT_SAMPLE_SENTENCE}

    def make_split(n: int) -> tuple[list[str], np.ndarray]:
        labels = _balanced_labels(rng, n, k)
        texts: list[str] = []
        for label in labels:
            for _ in range(1000):
                text = _make_example(rng, int(label))
                if text not in seen:
                    break
            else:  # pragma: no cover - practically impossible
                raise RuntimeError("could not generate a unique example")
            seen.add(text)
            texts.append(text)
        return texts, labels

    train_texts, train_labels = make_split(num_train)
    test_texts, test_labels = make_split(num_test)
    description = (
        f"Synthetic position-sensitive review task (seed={seed}, "
        f"{num_train} train / {num_test} test, {k} balanced classes). Each "
        f"sentence ({MIN_LENGTH}-{MAX_LENGTH} tokens) has one negator "
        f"({', '.join(NEGATORS)}) and one of {len(ADJECTIVES)} positive "
        f"adjectives amid filler phrases ({len(FILLER_VOCABULARY)}-word "
        f"vocabulary); the label is which comes "
        f"first and whether they are near (distance <= {NEAR_MAX_DISTANCE}) "
        f"or far (distance >= {FAR_MIN_DISTANCE}): "
        + "; ".join(f"{i}={name}" for i, name in enumerate(LABEL_NAMES))
        + ". Word counts carry no information about the label."
    )
    return SyntheticTask(
        train_texts=train_texts,
        train_labels=np.asarray(train_labels, dtype=np.int32),
        test_texts=test_texts,
        test_labels=np.asarray(test_labels, dtype=np.int32),
        label_names=list(LABEL_NAMES),
        description=description,
    )


def write_tsv(task: SyntheticTask, directory: str | os.PathLike) -> tuple[str, str]:
    """Write ``train.tsv``, ``test.tsv`` (``label<TAB>text``) and ``labels.txt``.

    Returns ``(train_path, test_path)``.
    """
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    paths = []
    for name, texts, labels in (
        ("train.tsv", task.train_texts, task.train_labels),
        ("test.tsv", task.test_texts, task.test_labels),
    ):
        path = os.path.join(directory, name)
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            for label, text in zip(labels, texts):
                f.write(f"{int(label)}\t{text}\n")
        paths.append(path)
    with open(
        os.path.join(directory, "labels.txt"), "w", encoding="utf-8", newline="\n"
    ) as f:
        for name in task.label_names:
            f.write(name + "\n")
    return paths[0], paths[1]


# A sentence of this world (not generated: it is excluded from every generated
# split).  The negator "not" is two tokens before "tasty": negated-positive.
DEFAULT_SAMPLE_SENTENCE = "honestly the soup was not very tasty and we left early"
DEFAULT_SAMPLE_LABEL = LABEL_NAMES[label_of(DEFAULT_SAMPLE_SENTENCE)]


def as_documents(task: SyntheticTask, max_extra_sentences: int = 3,
                 seed: int = 1234) -> SyntheticTask:
    """The document variant of a task, for hierarchical models (HCAN, HAN).

    Each text becomes one sentence of a document (its label's sentence),
    placed at a random position among 1 to ``max_extra_sentences`` filler
    sentences (class-independent filler, without negators or key
    adjectives); sentences end with ``"."``. The label is the key
    sentence's, so a model must find that sentence and read its word order;
    word counts still carry nothing.
    """
    rng = np.random.default_rng(seed)

    def documents(texts):
        out = []
        for text in texts:
            sentences = [" ".join(_filler(rng)[0])
                         for _ in range(int(rng.integers(1, max_extra_sentences + 1)))]
            sentences.insert(int(rng.integers(len(sentences) + 1)), text)
            out.append(" ".join(sentence + "." for sentence in sentences))
        return out

    first_line, _, rest = task.description.partition(". ")
    return dataclasses.replace(
        task,
        train_texts=documents(task.train_texts),
        test_texts=documents(task.test_texts),
        description=(f"{first_line}, as documents: the key sentence among 1-"
                     f"{max_extra_sentences} filler sentences. "
                     + rest.replace("Each sentence", "The key sentence", 1)),
    )


#: A document of the document variant around ``DEFAULT_SAMPLE_SENTENCE``.
DEFAULT_SAMPLE_DOCUMENT = (
    "we shared a pizza on the weekend. " + DEFAULT_SAMPLE_SENTENCE + "."
)
