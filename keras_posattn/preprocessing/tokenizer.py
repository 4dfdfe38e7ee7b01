"""The one tokenizer of the library, and deterministic vocabularies.

Every word the library sees - the models' preprocessors (inside the graph,
so the SavedModel tokenises as training did), the bag-of-words baseline,
vocabulary counts, attention labels - comes from ``standardize_strings``
followed by a split on white space (or into characters). Vocabularies are
counted in Python, not with ``adapt()``: words by frequency, descending, ties
alphabetical (by Unicode code point); index 0 is the padding token ``""`` and
index 1 ``"[UNK]"``.

The standardisations (``STANDARDIZE_OPTIONS``):

- ``"lower_and_split_punctuation"`` (the default): Unicode lower case, HTML
  line breaks (``<br />``, ``<br / >``...) and every punctuation or symbol
  character become a word boundary, and English clitics are split off as the
  Penn Treebank (and GloVe's vocabulary) does - ``"movie.The end...what?"``
  gives ``movie the end what``, ``"3.5"`` gives ``3 5``, ``"don't"`` gives
  ``do n't`` and ``"it's"`` ``it 's``. This is Kim's ``clean_str`` idea
  (which SPE-CNN and others follow): punctuation separates words, it never
  glues them together.
- ``"split_punctuation"``: the same without lower-casing.
- ``"lower_and_strip_punctuation"``: ``keras.layers.TextVectorization``'s
  default - ASCII punctuation is *deleted*, so ``"movie.The"`` becomes the
  one word ``moviethe`` (kept for models trained with it) - but lower case is
  Unicode lower case here.
- ``"strip_punctuation"``, ``"lower"``: one half of it each; ``None``: the
  text as it is.

Invalid UTF-8 is replaced with U+FFFD before anything else, so no input
string can make the graph fail.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Sequence

import numpy as np

import tensorflow as tf

__all__ = [
    "PAD_TOKEN",
    "OOV_TOKEN",
    "DEFAULT_STANDARDIZE",
    "STANDARDIZE_OPTIONS",
    "SPLIT_OPTIONS",
    "standardize_strings",
    "split_strings",
    "tokenize",
    "count_tokens",
    "build_vocabulary",
]

PAD_TOKEN = ""
OOV_TOKEN = "[UNK]"
DEFAULT_STANDARDIZE = "lower_and_split_punctuation"
STANDARDIZE_OPTIONS = (
    "lower_and_split_punctuation",
    "split_punctuation",
    "lower_and_strip_punctuation",
    "lower",
    "strip_punctuation",
    None,
)
SPLIT_OPTIONS = ("whitespace", "character", None)

# keras.layers.TextVectorization's punctuation (ASCII only), deleted by the
# *_strip_punctuation options.
_STRIPPED = r'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']'
# HTML line breaks, however spaced: <br>, <br/>, <br />, <BR / >.
LINE_BREAK_TAG = r"<\s*[bB][rR]\s*(?:/\s*)?>"
# A private-use character stands for the apostrophe of a clitic while every
# other punctuation character is turned into a space.
_APOSTROPHE = "\ue000"
_CLITICS = (
    # don't -> do n't, can't -> ca n't (as the Penn Treebank and GloVe split them)
    (r"(?i)n['\x{2019}]t(\PL|$)", " n" + _APOSTROPHE + r"t\1"),
    # it's -> it 's, we're -> we 're, I've, he'd, they'll, I'm
    (r"(?i)['\x{2019}](s|re|ve|d|ll|m)(\PL|$)", " " + _APOSTROPHE + r"\1\2"),
)
# Anything but letters, digits, combining marks, white space and the clitics'
# apostrophe is a boundary.
_BOUNDARY = r"[^\pL\pN\pM\s\x{E000}]+"
_BATCH = 4096


def _check_options(standardize, split) -> None:
    if standardize not in STANDARDIZE_OPTIONS:
        raise ValueError(
            f"standardize must be one of {STANDARDIZE_OPTIONS}, got {standardize!r} "
            "(callables are not accepted: they would not load with safe_mode=True)"
        )
    if split not in SPLIT_OPTIONS:
        raise ValueError(f"split must be one of {SPLIT_OPTIONS}, got {split!r}")


def standardize_strings(inputs, standardize=DEFAULT_STANDARDIZE):
    """Standardise a string tensor with TensorFlow ops (see the module docstring).

    Args:
        inputs: string tensor of any shape.
        standardize: one of ``STANDARDIZE_OPTIONS``.

    Returns:
        A string tensor of the same shape.
    """
    _check_options(standardize, "whitespace")
    if standardize is None:
        return inputs
    inputs = tf.strings.unicode_transcode(inputs, "UTF-8", "UTF-8", errors="replace")
    if standardize.startswith("lower"):
        inputs = tf.strings.lower(inputs, encoding="utf-8")
    if standardize.endswith("strip_punctuation"):
        return tf.strings.regex_replace(inputs, _STRIPPED, "")
    if standardize.endswith("split_punctuation"):
        inputs = tf.strings.regex_replace(inputs, LINE_BREAK_TAG, " ")
        # The private-use apostrophe cannot come from the text itself.
        inputs = tf.strings.regex_replace(inputs, _APOSTROPHE, " ")
        for pattern, rewrite in _CLITICS:
            inputs = tf.strings.regex_replace(inputs, pattern, rewrite)
        inputs = tf.strings.regex_replace(inputs, _BOUNDARY, " ")
        inputs = tf.strings.regex_replace(inputs, _APOSTROPHE, "'")
    return inputs


def split_strings(inputs, split="whitespace"):
    """Split standardised strings (batch,) into ragged tokens (batch, None)
    (``None``: one token per string, shape (batch,))."""
    if split == "whitespace":
        return tf.strings.split(inputs)
    if split == "character":
        return tf.strings.unicode_split(inputs, "UTF-8")
    return inputs


def _token_batches(texts: Sequence[str], standardize, split) -> Iterable[tuple[np.ndarray, np.ndarray]]:
    """Yield ``(flat tokens as bytes objects, tokens per text)`` per batch."""
    texts = list(texts)
    for start in range(0, len(texts), _BATCH):
        batch = tf.constant(texts[start : start + _BATCH], dtype=tf.string)
        out = split_strings(standardize_strings(batch, standardize), split)
        if isinstance(out, tf.RaggedTensor):
            flat = out.flat_values.numpy()
            lengths = out.row_lengths().numpy()
        else:  # split=None: one token per text
            flat = tf.reshape(out, [-1]).numpy()
            lengths = np.ones(len(flat), dtype=np.int64)
        yield flat, lengths


def tokenize(
    texts: Sequence[str],
    standardize: str | None = DEFAULT_STANDARDIZE,
    split: str | None = "whitespace",
) -> list[list[str]]:
    """Tokenize texts exactly as the preprocessors do.

    Args:
        texts: The texts to tokenize.
        standardize: One of ``STANDARDIZE_OPTIONS``.
        split: One of ``SPLIT_OPTIONS``.

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
    standardize: str | None = DEFAULT_STANDARDIZE,
    split: str | None = "whitespace",
) -> tuple[Counter, np.ndarray]:
    """Count token frequencies and per-text lengths as the layer would tokenize.

    Args:
        texts: The texts to tokenize.
        standardize: One of ``STANDARDIZE_OPTIONS``.
        split: One of ``SPLIT_OPTIONS``.

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
