"""Readers for labelled text files (TSV, CSV, JSON Lines) and label encoding.

Every reader splits files on ``"\\n"`` only (never ``str.splitlines()``, which
also breaks on U+0085, U+2028 and friends that occur inside real texts such as
IMDB reviews) and strips one trailing ``"\\r"`` per line. Any problem with the
content of a file is reported as a :class:`DataFormatError` whose message
starts with ``path:line:``.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence, Union

import numpy as np

__all__ = [
    "DataFormatError",
    "LabelledTexts",
    "read_labelled",
    "read_texts",
    "encode_labels",
    "read_label_names",
    "find_label_names",
    "SUPPORTED_FORMATS",
]

PathLike = Union[str, Path]
Column = Union[str, int]

SUPPORTED_FORMATS = ("tsv", "csv", "jsonl")
_SUFFIX_TO_FORMAT = {".tsv": "tsv", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
_INT_RE = re.compile(r"^-?[0-9]+$")


class DataFormatError(ValueError):
    """Error in the content of a data file, located by file path and 1-based line.

    Args:
        path: The file in which the problem was found.
        line: 1-based line number of the problem (``None`` when it concerns
            the whole file).
        message: What is wrong, ideally with what was expected and found.
    """

    def __init__(self, path: PathLike, line: int | None, message: str):
        self.path = str(path)
        self.line = line
        self.reason = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")

    def __reduce__(self):  # keep picklable (multiprocessing, pytest-xdist)
        return (type(self), (self.path, self.line, self.reason))


@dataclass
class LabelledTexts:
    """Texts with their raw label strings, as read from one file.

    Args:
        texts: The example texts, in file order.
        labels: The raw label strings, exactly as written in the file
            (use :func:`encode_labels` to turn them into integer ids).
        path: The file they were read from.
        encoding: The text encoding that was used to decode the file
            (useful with ``encoding="auto"``).
        lines: The 1-based line of the file each example starts on (for
            error messages; empty when not read from a file).
    """

    texts: list[str]
    labels: list[str]
    path: str
    encoding: str = field(default="utf-8", compare=False)
    lines: list[int] = field(default_factory=list, compare=False)

    def __len__(self) -> int:
        return len(self.texts)

    def __repr__(self) -> str:
        return (
            f"LabelledTexts(path={self.path!r}, n={len(self.texts)}, "
            f"labels={sorted(set(self.labels))[:10]!r})"
        )


# --------------------------------------------------------------------------
# decoding and line splitting
# --------------------------------------------------------------------------


def _line_of_offset(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


#: Byte-order marks, the longest first (UTF-32 LE's starts with UTF-16 LE's).
_BOMS = (
    (b"\xff\xfe\x00\x00", "utf-32", "UTF-32 LE"),
    (b"\x00\x00\xfe\xff", "utf-32", "UTF-32 BE"),
    (b"\xff\xfe", "utf-16", "UTF-16 LE"),
    (b"\xfe\xff", "utf-16", "UTF-16 BE"),
)


def utf16_or_32(data: bytes) -> str | None:
    """The name of the UTF-16/UTF-32 encoding whose byte-order mark starts
    ``data`` ("UTF-16 LE", ...), or None."""
    for bom, _, name in _BOMS:
        if data.startswith(bom):
            return name
    return None


def _is_utf8(encoding: str) -> bool:
    return encoding.replace("-", "").replace("_", "").lower() in ("utf8", "utf8sig")


def _unicode_without_utf8(path: PathLike, data: bytes, encoding: str) -> tuple[str, str] | None:
    """``(text, encoding)`` for a UTF-16/32 file with a byte-order mark, None
    for other files; errors for what cannot be read as asked."""
    for bom, codec, name in _BOMS:
        if data.startswith(bom):
            named = encoding.lower().replace("_", "").replace("-", "")
            if encoding != "auto" and not _is_utf8(encoding) and not named.startswith(
                    codec.replace("-", "")):
                raise DataFormatError(
                    path, 1,
                    f"the file is {name} (it starts with that byte-order mark), not "
                    f"{encoding}; re-save it as UTF-8 or read it with encoding='auto'",
                )
            try:
                return data.decode(codec), codec
            except UnicodeDecodeError as err:
                raise DataFormatError(
                    path, data[:err.start].decode(codec, "replace").count("\n") + 1,
                    f"not valid {name} although it starts with that byte-order mark "
                    f"({err.reason})",
                ) from None
    head = data[:4000]
    if (encoding == "auto" or _is_utf8(encoding)) and len(head) >= 4:
        odd, even = head[1::2].count(0), head[0::2].count(0)
        for zeros, other, name in ((odd, even, "UTF-16 LE"), (even, odd, "UTF-16 BE")):
            if zeros >= len(head) // 4 and other <= zeros // 10:
                raise DataFormatError(
                    path, 1,
                    f"looks like {name} without a byte-order mark (every other byte "
                    "is NUL); re-save it as UTF-8",
                )
    return None


def _decode(path: PathLike, data: bytes, encoding: str) -> tuple[str, str]:
    """Decode file bytes, returning ``(text, encoding_used)``."""
    decoded = _unicode_without_utf8(path, data, encoding)
    if decoded is not None:
        return decoded
    if encoding == "auto":
        try:
            return _strip_bom(data.decode("utf-8")), "utf-8"
        except UnicodeDecodeError as utf8_err:
            try:
                return data.decode("cp1252"), "cp1252"
            except UnicodeDecodeError as err:
                raise DataFormatError(
                    path,
                    _line_of_offset(data, err.start),
                    f"cannot decode byte 0x{data[err.start]:02x} as UTF-8 "
                    f"(first bad byte at line {_line_of_offset(data, utf8_err.start)}) "
                    "nor as cp1252",
                ) from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as err:
        raise DataFormatError(
            path,
            _line_of_offset(data, err.start),
            f"cannot decode byte 0x{data[err.start]:02x} as {encoding} "
            f"({err.reason}); pass encoding='auto' to fall back to cp1252, "
            "or the file's real encoding",
        ) from None
    except LookupError:
        raise ValueError(f"unknown encoding {encoding!r}") from None
    if _is_utf8(encoding):
        text = _strip_bom(text)
    return text, encoding


def _strip_bom(text: str) -> str:
    return text[1:] if text.startswith("\ufeff") else text


def _read_text(path: PathLike, encoding: str) -> tuple[str, str]:
    data = Path(path).read_bytes()
    return _decode(path, data, encoding)


def _iter_lines(text: str) -> Iterator[tuple[int, str]]:
    """Yield ``(1-based line number, line)`` splitting on "\\n" only."""
    for number, line in enumerate(text.split("\n"), start=1):
        if line.endswith("\r"):
            line = line[:-1]
        yield number, line


def _is_blank(line: str) -> bool:
    return line.strip(" \t\r\f\v") == ""


# --------------------------------------------------------------------------
# public readers
# --------------------------------------------------------------------------


def read_texts(path: PathLike, encoding: str = "utf-8") -> list[str]:
    """Read a plain text file holding one example text per line.

    Empty lines are skipped. Useful for the original MR/SUBJ files
    (``rt-polarity.pos`` is cp1252: use ``encoding="auto"`` or ``"cp1252"``).

    Args:
        path: The file to read.
        encoding: A codec name, or ``"auto"`` to try UTF-8 and fall back to
            cp1252 for the whole file.

    Returns:
        The list of lines (without line terminators).
    """
    text, _ = _read_text(path, encoding)
    return [line for _, line in _iter_lines(text) if not _is_blank(line)]


def read_labelled(
    path: PathLike,
    format: str | None = None,
    text_column: Column | Sequence[Column] = "text",
    label_column: Column = "label",
    encoding: str = "utf-8",
    header: bool | Sequence[str] = True,
) -> LabelledTexts:
    """Read a file of labelled texts in TSV, CSV or JSON Lines format.

    Formats (inferred from the suffix when ``format`` is None):

    * ``tsv``: ``label<TAB>text`` per line, no header; split on the first tab.
    * ``csv``: comma-separated values with a header row by default; the text
      and label are taken from named columns. Headerless files such as the
      original AG News CSV are read with ``header=False`` and 0-based column
      indices (``label_column=0, text_column=[1, 2]``) or with
      ``header=["class", "title", "description"]`` and names.
    * ``jsonl``: one JSON object per line, with keys ``text_column`` and
      ``label_column``.

    Empty lines are skipped. A list of text columns/keys is joined with a
    single space. Label values are kept as raw strings (JSON integers become
    their decimal string).

    Args:
        path: The file to read.
        format: ``"tsv"``, ``"csv"``, ``"jsonl"`` or None to infer it from
            the file suffix.
        text_column: CSV column / JSON key of the text, or a list of them to
            join with " " (e.g. ``["title", "description"]``). For CSV, an
            int is a 0-based column index. Ignored for TSV.
        label_column: CSV column / JSON key (or CSV 0-based index) of the
            label. Ignored for TSV.
        encoding: A codec name, or ``"auto"`` to try UTF-8 and fall back to
            cp1252 for the whole file. Decoding errors raise
            :class:`DataFormatError` naming the line of the bad byte.
        header: CSV only. True if the first row holds the column names,
            False if the file has no header (columns are then addressed by
            0-based index), or a list of column names for a headerless file.

    Returns:
        A :class:`LabelledTexts`.

    Raises:
        DataFormatError: On a malformed line (message ``path:line: ...``).
        ValueError: On an unknown format.
    """
    fmt = _resolve_format(path, format)
    text, used = _read_text(path, encoding)
    if fmt == "tsv":
        texts, labels, lines = _parse_tsv(path, text)
    elif fmt == "jsonl":
        texts, labels, lines = _parse_jsonl(path, text, text_column, label_column)
    else:
        texts, labels, lines = _parse_csv(path, text, text_column, label_column, header)
    return LabelledTexts(texts=texts, labels=labels, path=str(path), encoding=used, lines=lines)


def _resolve_format(path: PathLike, format: str | None) -> str:
    if format is not None:
        fmt = format.lower().lstrip(".")
        if fmt in ("ndjson", "jsonlines"):
            fmt = "jsonl"
        if fmt not in SUPPORTED_FORMATS:
            raise ValueError(
                f"unknown format {format!r}; expected one of {SUPPORTED_FORMATS}"
            )
        return fmt
    suffix = Path(path).suffix.lower()
    if suffix not in _SUFFIX_TO_FORMAT:
        raise ValueError(
            f"{path}: cannot infer the format from suffix {suffix!r}; pass "
            f"format= one of {SUPPORTED_FORMATS}"
        )
    return _SUFFIX_TO_FORMAT[suffix]


#: Column names that make a TSV file's first line a header row.
_HEADER_LABELS = {"label", "labels", "class", "category", "target", "y"}
_HEADER_TEXTS = {"text", "texts", "sentence", "review", "document", "content", "x"}


def _parse_tsv(path: PathLike, text: str) -> tuple[list[str], list[str], list[int]]:
    texts: list[str] = []
    labels: list[str] = []
    lines: list[int] = []
    for number, line in _iter_lines(text):
        if _is_blank(line):
            continue
        label, tab, body = line.partition("\t")
        if not tab:
            raise DataFormatError(
                path, number, "expected 'label<TAB>text', found no tab"
            )
        label = label.strip()
        if not label:
            raise DataFormatError(path, number, "empty label before the tab")
        if not lines and label.lower() in _HEADER_LABELS and body.strip().lower() in _HEADER_TEXTS:
            raise DataFormatError(
                path, number,
                f"{line!r} looks like a header row, but TSV files have none: delete "
                "the line, or use a .csv file with named columns",
            )
        labels.append(label)
        texts.append(body)
        lines.append(number)
    return texts, labels, lines


def _as_list(column) -> list:
    if isinstance(column, (str, int)):
        return [column]
    columns = list(column)
    if not columns:
        raise ValueError("text_column must name at least one column")
    return columns


def _label_to_str(path, number, value, key) -> str:
    if isinstance(value, bool) or value is None:
        raise DataFormatError(
            path, number, f"label {key!r} must be a string or an integer, found {value!r}"
        )
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        value = value.strip()
        if not value:
            raise DataFormatError(path, number, f"empty label in {key!r}")
        return value
    raise DataFormatError(
        path, number, f"label {key!r} must be a string or an integer, found {value!r}"
    )


def _parse_jsonl(path, text, text_column, label_column) -> tuple[list[str], list[str], list[int]]:
    text_keys = _as_list(text_column)
    texts: list[str] = []
    labels: list[str] = []
    lines: list[int] = []
    loads = json.loads
    for number, line in _iter_lines(text):
        if _is_blank(line):
            continue
        try:
            obj = loads(line)
        except json.JSONDecodeError as err:
            raise DataFormatError(path, number, f"invalid JSON: {err.msg} (column {err.colno})") from None
        if not isinstance(obj, dict):
            raise DataFormatError(
                path, number, f"expected a JSON object, found {type(obj).__name__}"
            )
        if label_column not in obj:
            raise DataFormatError(
                path, number, f"missing key {label_column!r}; keys are {sorted(obj)}"
            )
        parts = []
        for key in text_keys:
            if key not in obj:
                raise DataFormatError(
                    path, number, f"missing key {key!r}; keys are {sorted(obj)}"
                )
            value = obj[key]
            if not isinstance(value, str):
                raise DataFormatError(
                    path, number, f"text {key!r} must be a string, found {type(value).__name__}"
                )
            parts.append(value)
        labels.append(_label_to_str(path, number, obj[label_column], label_column))
        texts.append(parts[0] if len(parts) == 1 else " ".join(parts))
        lines.append(number)
    return texts, labels, lines


def _csv_rows(path, text) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(first line number, row)`` for the non-empty CSV records."""
    lines = [line + "\n" for _, line in _iter_lines(text)]
    if lines and lines[-1] == "\n":  # the file's final newline
        lines.pop()
    reader = csv.reader(iter(lines), strict=True)
    start = 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as err:
            raise DataFormatError(path, start, f"malformed CSV: {err}") from None
        if row and not (len(row) == 1 and _is_blank(row[0])):
            yield start, row
        start = reader.line_num + 1


def _resolve_columns(path, columns, names, header_line, what) -> list[int]:
    indices = []
    for col in columns:
        if isinstance(col, bool) or not isinstance(col, (str, int)):
            raise TypeError(f"{what} must be a column name or index, got {col!r}")
        if isinstance(col, int):
            if names is not None and not 0 <= col < len(names):
                raise DataFormatError(
                    path, header_line,
                    f"{what} index {col} out of range for {len(names)} columns {names}",
                )
            indices.append(col)
            continue
        if names is None:
            raise DataFormatError(
                path, None,
                f"{what} {col!r} is a name but the file is read with header=False; "
                "use 0-based column indices or header=[names]",
            )
        if col not in names:
            raise DataFormatError(
                path, header_line,
                f"no column {col!r} for {what}; available columns: {names}. If the "
                "file has no header row, pass header=False with column indices "
                "or header=[names]",
            )
        indices.append(names.index(col))
    return indices


def _parse_csv(path, text, text_column, label_column, header) -> tuple[list[str], list[str], list[int]]:
    old_limit = csv.field_size_limit()
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    try:
        rows = _csv_rows(path, text)
        names: list[str] | None
        header_line: int | None = None
        if header is True:
            try:
                header_line, first = next(rows)
            except StopIteration:
                raise DataFormatError(path, 1, "empty CSV file: no header row") from None
            names = [name.strip() for name in first]
            width: int | None = len(names)
        elif header is False or header is None:
            names, width = None, None
        else:
            names = [str(name) for name in header]
            width = len(names)
        text_idx = _resolve_columns(path, _as_list(text_column), names, header_line, "text_column")
        (label_idx,) = _resolve_columns(path, [label_column], names, header_line, "label_column")
        needed = max(text_idx + [label_idx]) + 1
        texts: list[str] = []
        labels: list[str] = []
        lines: list[int] = []
        for number, row in rows:
            if width is None:
                width = len(row)
                if width < needed:
                    raise DataFormatError(
                        path, number,
                        f"expected at least {needed} fields for the requested columns, found {width}",
                    )
            if len(row) != width:
                raise DataFormatError(
                    path, number, f"expected {width} fields, found {len(row)}"
                )
            label = row[label_idx].strip()
            if not label:
                raise DataFormatError(path, number, "empty label")
            labels.append(label)
            texts.append(" ".join(row[i] for i in text_idx))
            lines.append(number)
        return texts, labels, lines
    finally:
        csv.field_size_limit(old_limit)


# --------------------------------------------------------------------------
# labels
# --------------------------------------------------------------------------


def read_label_names(path: PathLike) -> list[str]:
    """Read class names from a ``labels.txt`` file, returned in id order.

    Two layouts are accepted (one per file): one name per line in id order,
    or ``id<TAB>name`` per line (the layout of the shared benchmark data),
    where the ids must be exactly ``0..K-1`` (in any order).

    Args:
        path: The labels file (UTF-8).

    Returns:
        The class names; ``names[i]`` is the class with id ``i``.

    Raises:
        DataFormatError: On a blank line between names, a duplicate name or
            id, a bad id, mixed layouts or an empty file.
    """
    text, _ = _read_text(path, "utf-8")
    lines = list(_iter_lines(text))
    while lines and _is_blank(lines[-1][1]):
        lines.pop()
    if not lines:
        raise DataFormatError(path, None, "no label names in file")
    with_ids = "\t" in lines[0][1]
    by_id: dict[int, tuple[str, int]] = {}
    seen: dict[str, int] = {}
    for number, line in lines:
        if _is_blank(line):
            raise DataFormatError(path, number, "blank line inside the label names")
        if with_ids:
            key, tab, name = line.partition("\t")
            if not tab:
                raise DataFormatError(
                    path, number, "expected 'id<TAB>name' like the first line, found no tab"
                )
            label_id = _as_int(key)
            if label_id is None or label_id < 0:
                raise DataFormatError(path, number, f"bad label id {key!r}")
            if label_id in by_id:
                raise DataFormatError(
                    path, number, f"duplicate label id {label_id} (first on line {by_id[label_id][1]})"
                )
        else:
            if "\t" in line:
                raise DataFormatError(
                    path, number, "found 'id<TAB>name' but the first line has no id"
                )
            name, label_id = line, len(by_id)
        name = name.strip()
        if not name:
            raise DataFormatError(path, number, "empty label name")
        if name in seen:
            raise DataFormatError(
                path, number, f"duplicate label name {name!r} (first on line {seen[name]})"
            )
        seen[name] = number
        by_id[label_id] = (name, number)
    if sorted(by_id) != list(range(len(by_id))):
        missing = sorted(set(range(max(by_id) + 1)) - set(by_id))
        raise DataFormatError(
            path, None, f"label ids must be 0..{len(by_id) - 1}; missing ids {missing}"
        )
    return [by_id[i][0] for i in range(len(by_id))]


def find_label_names(data_path: PathLike) -> list[str] | None:
    """Return the class names from a ``labels.txt`` beside a data file, if any.

    Args:
        data_path: A data file (e.g. ``trec/train.tsv``); its folder is searched.

    Returns:
        The names from ``<folder>/labels.txt``, or None when there is no such file.
    """
    candidate = Path(data_path).parent / "labels.txt"
    if candidate.is_file():
        return read_label_names(candidate)
    return None


def _as_int(label: str) -> int | None:
    label = label.strip()
    return int(label) if _INT_RE.match(label) else None


def encode_labels(
    labels: Sequence[str],
    names: Sequence[str] | None = None,
    *,
    path: PathLike | None = None,
    lines: Sequence[int] | None = None,
    names_from: str | None = None,
) -> tuple[np.ndarray, list[str]]:
    """Turn raw label strings into integer class ids and a list of class names.

    With ``names`` (e.g. from ``labels.txt``): a raw label that is an integer
    in ``[0, len(names))`` is that id, and a raw label equal to a name maps to
    the name's index. If some name is itself an integer string different from
    its own index (e.g. names ``["1", "2", "3", "4"]`` for AG News classes),
    integer interpretation is ambiguous and labels are matched by name only.

    Without ``names``: if the raw labels are exactly the integers ``0..K-1``
    they are the ids and the names are ``"0".."K-1"``; if they are other
    integers the names are the distinct values sorted numerically; otherwise
    the names are the sorted distinct label strings.

    Args:
        labels: Raw label strings (ints are accepted too).
        names: Optional known class names in id order.
        path, lines: The file the labels were read from and the 1-based line
            of each (``LabelledTexts.path`` and ``.lines``): an unknown label
            is then a :class:`DataFormatError` at ``path:line``.
        names_from: Where ``names`` came from (e.g. the ``labels.txt``
            path), for the error message.

    Returns:
        ``(ids, names)`` where ``ids`` is an int32 array with one id per label.

    Raises:
        ValueError: A label matches no known class; the message lists the names
            (a ``DataFormatError`` naming the file and line with ``path``).
    """
    raw = [str(label).strip() for label in labels]
    if names is not None:
        names = [str(n) for n in names]
        index = {name: i for i, name in enumerate(names)}
        if len(index) != len(names):
            raise ValueError(f"duplicate class names in {names}")
        ambiguous = any(
            _as_int(name) is not None and _as_int(name) != i for i, name in enumerate(names)
        )
        ids = np.empty(len(raw), dtype=np.int32)
        cache: dict[str, int] = {}
        for pos, label in enumerate(raw):
            found = cache.get(label)
            if found is None:
                value = None if ambiguous else _as_int(label)
                if value is not None and 0 <= value < len(names):
                    found = value
                elif label in index:
                    found = index[label]
                else:
                    shown = names if len(names) <= 50 else names[:50] + ["..."]
                    known = f"ids 0..{len(names) - 1}" + (f", from {names_from}" if names_from else "")
                    if path is not None:
                        raise DataFormatError(
                            path, lines[pos] if lines else None,
                            f"unknown label {label!r}; the class names ({known}) are {shown}",
                        )
                    raise ValueError(
                        f"unknown label {label!r} (example {pos}); known class names "
                        f"({known}): {shown}"
                    )
                cache[label] = found
            ids[pos] = found
        return ids, names

    distinct = set(raw)
    as_ints = {label: _as_int(label) for label in distinct}
    if distinct and all(v is not None for v in as_ints.values()):
        values = sorted(set(as_ints.values()))
        if values == list(range(len(values))):
            ids = np.fromiter((as_ints[l] for l in raw), dtype=np.int32, count=len(raw))
            return ids, [str(v) for v in values]
        position = {v: i for i, v in enumerate(values)}
        ids = np.fromiter(
            (position[as_ints[l]] for l in raw), dtype=np.int32, count=len(raw)
        )
        return ids, [str(v) for v in values]
    out_names = sorted(distinct)
    position = {name: i for i, name in enumerate(out_names)}
    ids = np.fromiter((position[l] for l in raw), dtype=np.int32, count=len(raw))
    return ids, out_names
