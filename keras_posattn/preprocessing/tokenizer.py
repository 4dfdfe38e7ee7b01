"""The one tokenizer of the library, and deterministic vocabularies.

Tokens are exactly what ``keras.layers.TextVectorization`` makes of a text
with the same ``standardize`` and ``split`` options (the layer's own code is
run), so the models' preprocessors, the bag-of-words baseline and the
vocabulary counts all see the same words. Vocabularies are counted in Python,
not with ``adapt()``: words by frequency, descending, ties alphabetical (by
Unicode code point); index 0 is the padding token ``""`` and index 1
``"[UNK]"``.
"""

from __future__ import annotations

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
