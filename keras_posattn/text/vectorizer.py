"""Deterministic construction of a ``keras.layers.TextVectorization`` layer.

The vocabulary is counted in Python over exactly the tokens the layer itself
produces (the layer's own standardize + split code is run over the texts) and
is passed to the layer with ``vocabulary=``, so it does not depend on
``adapt()`` or on tf.data ordering: words are sorted by frequency, descending,
ties broken alphabetically (by Unicode code point). Index 0 is the padding
token ``""`` and index 1 is ``"[UNK]"``.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Iterable, Sequence

import numpy as np

import keras
import tensorflow as tf

__all__ = [
    "PAD_TOKEN",
    "OOV_TOKEN",
    "STANDARDIZE_OPTIONS",
    "SPLIT_OPTIONS",
    "tokenize",
    "count_tokens",
    "build_vocabulary",
    "build_vectorizer",
    "vectorizer_vocabulary",
]

PAD_TOKEN = ""
OOV_TOKEN = "[UNK]"
STANDARDIZE_OPTIONS = ("lower_and_strip_punctuation", "lower", "strip_punctuation", None)
SPLIT_OPTIONS = ("whitespace", "character", None)

# Same pattern as keras.layers.TextVectorization (used only if the layer's
# private _preprocess is ever unavailable).
_PUNCTUATION = r'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']'
_BATCH = 4096


def _check_options(standardize, split) -> None:
    if standardize not in STANDARDIZE_OPTIONS:
        raise ValueError(
            f"standardize must be one of {STANDARDIZE_OPTIONS}, got {standardize!r} "
            "(callables are not accepted: they would not load with safe_mode=True)"
        )
    if split not in SPLIT_OPTIONS:
        raise ValueError(f"split must be one of {SPLIT_OPTIONS}, got {split!r}")


def _fallback_preprocess(inputs, standardize, split):
    if standardize in ("lower", "lower_and_strip_punctuation"):
        inputs = tf.strings.lower(inputs)
    if standardize in ("strip_punctuation", "lower_and_strip_punctuation"):
        inputs = tf.strings.regex_replace(inputs, _PUNCTUATION, "")
    if split == "whitespace":
        inputs = tf.strings.split(inputs)
    elif split == "character":
        inputs = tf.strings.unicode_split(inputs, "UTF-8")
    return inputs


def _token_batches(texts: Sequence[str], standardize, split) -> Iterable[tuple[np.ndarray, np.ndarray]]:
    """Yield ``(flat tokens as bytes objects, tokens per text)`` per batch."""
    layer = keras.layers.TextVectorization(
        standardize=standardize, split=split, output_mode="int"
    )
    preprocess = getattr(layer, "_preprocess", None)
    texts = list(texts)
    for start in range(0, len(texts), _BATCH):
        batch = tf.constant(texts[start : start + _BATCH], dtype=tf.string)
        if preprocess is not None:
            out = preprocess(batch)
        else:  # pragma: no cover - only for a future Keras without _preprocess
            out = _fallback_preprocess(batch, standardize, split)
        if isinstance(out, tf.RaggedTensor):
            flat = out.flat_values.numpy()
            lengths = out.row_lengths().numpy()
        else:  # split=None: one token per text
            flat = tf.reshape(out, [-1]).numpy()
            lengths = np.ones(len(flat), dtype=np.int64)
        yield flat, lengths


def tokenize(
    texts: Sequence[str],
    standardize: str | None = "lower_and_strip_punctuation",
    split: str | None = "whitespace",
) -> list[list[str]]:
    """Tokenize texts exactly as a TextVectorization layer with these options does.

    Args:
        texts: The texts to tokenize.
        standardize: A TextVectorization ``standardize`` value.
        split: A TextVectorization ``split`` value.

    Returns:
        One list of token strings per text.
    """
    _check_options(standardize, split)
    result: list[list[str]] = []
    for flat, lengths in _token_batches(texts, standardize, split):
        tokens = [t.decode("utf-8") for t in flat]
        pos = 0
        for n in lengths:
            result.append(tokens[pos : pos + int(n)])
            pos += int(n)
    return result


def count_tokens(
    texts: Sequence[str],
    standardize: str | None = "lower_and_strip_punctuation",
    split: str | None = "whitespace",
) -> tuple[Counter, np.ndarray]:
    """Count token frequencies and per-text lengths as the layer would tokenize.

    Args:
        texts: The texts to tokenize.
        standardize: A TextVectorization ``standardize`` value.
        split: A TextVectorization ``split`` value.

    Returns:
        ``(counts, lengths)``: a Counter from token string to frequency and an
        int64 array with the number of tokens of each text.
    """
    _check_options(standardize, split)
    byte_counts: Counter = Counter()
    all_lengths = []
    for flat, lengths in _token_batches(texts, standardize, split):
        byte_counts.update(flat.tolist())
        all_lengths.append(lengths)
    counts = Counter({token.decode("utf-8"): n for token, n in byte_counts.items()})
    lengths = np.concatenate(all_lengths) if all_lengths else np.zeros(0, dtype=np.int64)
    return counts, lengths.astype(np.int64)


def build_vocabulary(counts: Counter, max_tokens: int | None = None, min_count: int = 1) -> list[str]:
    """Order words by frequency (descending, ties alphabetical) and cut the tail.

    Args:
        counts: Token frequencies.
        max_tokens: Maximum vocabulary size *including* the padding and
            ``[UNK]`` tokens (as in TextVectorization), or None for no limit.
        min_count: Words seen fewer times than this are dropped.

    Returns:
        The vocabulary without the two special tokens.
    """
    if max_tokens is not None and max_tokens < 3:
        raise ValueError(f"max_tokens must be at least 3 (PAD, [UNK], one word), got {max_tokens}")
    if min_count < 1:
        raise ValueError(f"min_count must be >= 1, got {min_count}")
    words = [
        (word, n)
        for word, n in counts.items()
        if n >= min_count and word not in (PAD_TOKEN, OOV_TOKEN)
    ]
    words.sort(key=lambda item: (-item[1], item[0]))
    if max_tokens is not None:
        words = words[: max_tokens - 2]
    return [word for word, _ in words]


def build_vectorizer(
    texts: Sequence[str],
    max_length: int | None = None,
    max_tokens: int | None = None,
    min_count: int = 1,
    standardize: str | None = "lower_and_strip_punctuation",
    split: str | None = "whitespace",
    length_percentile: float | None = None,
    name: str | None = None,
) -> keras.layers.TextVectorization:
    """Build a TextVectorization layer (``output_mode="int"``) with a deterministic vocabulary.

    The layer is created with ``vocabulary=`` (index 0 ``""``, index 1
    ``"[UNK]"``, then words by frequency descending, ties alphabetical) and
    called once on a dummy string so it can be tracked by
    ``keras.export.ExportArchive``. It round-trips through ``.keras`` files
    (the vocabulary is stored in the layer config).

    Args:
        texts: Training texts the vocabulary is counted on.
        max_length: Output sequence length (longer texts are truncated,
            shorter ones padded with 0). None: the longest training text in
            tokens, or the ``length_percentile`` of the lengths if given.
        max_tokens: Maximum vocabulary size including PAD and [UNK]; None
            keeps every word with at least ``min_count`` occurrences.
        min_count: Words seen fewer times become [UNK].
        standardize: ``"lower_and_strip_punctuation"``, ``"lower"``,
            ``"strip_punctuation"`` or None, as for TextVectorization.
        split: ``"whitespace"``, ``"character"`` or None.
        length_percentile: Percentile (0-100) of the training lengths to use
            as ``max_length`` when that is None (rounded up).
        name: Optional layer name.

    Returns:
        The ready-to-use ``keras.layers.TextVectorization``.
    """
    _check_options(standardize, split)
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of strings, not one string")
    texts = list(texts)
    if not texts:
        raise ValueError("cannot build a vectorizer from zero texts")
    if max_length is not None and length_percentile is not None:
        raise ValueError("give max_length or length_percentile, not both")
    counts, lengths = count_tokens(texts, standardize, split)
    vocabulary = build_vocabulary(counts, max_tokens=max_tokens, min_count=min_count)
    if not vocabulary:
        raise ValueError(
            f"no token occurs at least min_count={min_count} times in the {len(texts)} texts"
        )
    if max_length is None:
        if length_percentile is not None:
            if not 0 <= length_percentile <= 100:
                raise ValueError(f"length_percentile must be in [0, 100], got {length_percentile}")
            max_length = math.ceil(float(np.percentile(lengths, length_percentile)) - 1e-9)
        else:
            max_length = int(lengths.max())
        max_length = max(1, int(max_length))
    elif int(max_length) < 1:
        raise ValueError(f"max_length must be >= 1, got {max_length}")
    layer = keras.layers.TextVectorization(
        standardize=standardize,
        split=split,
        output_mode="int",
        output_sequence_length=int(max_length),  # must be a Python int, not np.int64
        vocabulary=vocabulary,
        name=name,
    )
    # A layer created with vocabulary= must be called once before it can be
    # tracked by keras.export.ExportArchive.
    layer(tf.constant(["warm up"]))
    return layer


def vectorizer_vocabulary(vectorizer: keras.layers.TextVectorization) -> list[str]:
    """Return the vocabulary of a TextVectorization layer as Python strings.

    Args:
        vectorizer: The layer.

    Returns:
        The vocabulary including ``""`` (index 0) and ``"[UNK]"`` (index 1).
    """
    return [
        token.decode("utf-8") if isinstance(token, bytes) else str(token)
        for token in vectorizer.get_vocabulary(include_special_tokens=True)
    ]
