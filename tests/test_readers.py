"""Tests for keras_posattn.datasets.readers (file formats, errors, label encoding)."""

import json
import os
from pathlib import Path

import numpy as np
import pytest

from keras_posattn.datasets.readers import (
    DataFormatError,
    LabelledTexts,
    encode_labels,
    find_label_names,
    read_label_names,
    read_labelled,
    read_texts,
)


def _data_root() -> Path:
    """Locate the shared benchmark data beside the repository, or via KERAS_POSATTN_DATA."""
    beside = Path(__file__).resolve().parents[2] / "shared" / "datasets"
    if beside.exists():
        return beside
    return Path(os.environ.get("KERAS_POSATTN_DATA", str(beside)))


DATA = _data_root()
needs_data = pytest.mark.skipif(
    not DATA.exists(), reason=f"shared datasets not found at {DATA} (set KERAS_POSATTN_DATA)"
)


def write(path: Path, content, encoding="utf-8") -> Path:
    if isinstance(content, str):
        content = content.encode(encoding)
    path.write_bytes(content)
    return path


def assert_error_at(excinfo, path: Path, line: int):
    message = str(excinfo.value)
    assert path.name in message
    assert f"{path.name}:{line}:" in message, message
    assert excinfo.value.line == line


def read_error(path: Path, line: int, **kwargs) -> str:
    """The message of the DataFormatError that reading ``path`` raises at ``line``."""
    with pytest.raises(DataFormatError) as excinfo:
        read_labelled(path, **kwargs)
    assert_error_at(excinfo, path, line)
    return str(excinfo.value)


# ----------------------------------------------------------------------- TSV


def test_tsv_good(tmp_path):
    p = write(tmp_path / "train.tsv", "0\thello world\n1\tsecond\ttabbed text\r\n\n2\tthird\n")
    data = read_labelled(p)
    assert isinstance(data, LabelledTexts)
    assert data.texts == ["hello world", "second\ttabbed text", "third"]
    assert data.labels == ["0", "1", "2"]
    assert data.path == str(p)
    assert len(data) == 3


def test_tsv_no_tab_names_file_and_line(tmp_path):
    p = write(tmp_path / "train.tsv", "0\tok\n\n1 no tab here\n")
    assert "no tab" in read_error(p, 3)


def test_tsv_empty_label(tmp_path):
    p = write(tmp_path / "train.tsv", "0\tok\n1\tok\n\tno label\n")
    with pytest.raises(DataFormatError) as excinfo:
        read_labelled(p)
    assert_error_at(excinfo, p, 3)


def test_u0085_stays_inside_one_example(tmp_path):
    p = write(tmp_path / "d.tsv", "1\tbefore\u0085after \u2028 still\n0\tnext\n")
    data = read_labelled(p)
    assert data.texts == ["before\u0085after \u2028 still", "next"]
    j = write(tmp_path / "d.jsonl", json.dumps({"label": 1, "text": "a\u0085b"}) + "\n")
    assert read_labelled(j).texts == ["a\u0085b"]


def test_format_argument_and_unknown_suffix(tmp_path):
    p = write(tmp_path / "data.txt", "a\tx\n")
    with pytest.raises(ValueError, match="format"):
        read_labelled(p)
    assert read_labelled(p, format="tsv").labels == ["a"]
    with pytest.raises(ValueError, match="unknown format"):
        read_labelled(p, format="xml")


# ------------------------------------------------------------------ encoding


CP1252_LINES = "0\tplain line\n1\tcaf\u00e9 \u2013 na\u00efve \u201cquoted\u201d\n"


def test_cp1252_auto_fallback(tmp_path):
    p = write(tmp_path / "mr.tsv", CP1252_LINES, encoding="cp1252")
    data = read_labelled(p, encoding="auto")
    assert data.texts[1] == "caf\u00e9 \u2013 na\u00efve \u201cquoted\u201d"
    assert data.encoding == "cp1252"
    # explicit cp1252 works too
    assert read_labelled(p, encoding="cp1252").texts == data.texts


def test_auto_prefers_utf8(tmp_path):
    p = write(tmp_path / "u.tsv", CP1252_LINES, encoding="utf-8")
    data = read_labelled(p, encoding="auto")
    assert data.encoding == "utf-8"
    assert data.texts[1].startswith("caf\u00e9")


def test_strict_utf8_error_names_line_of_bad_byte(tmp_path):
    p = write(tmp_path / "mr.tsv", CP1252_LINES, encoding="cp1252")
    with pytest.raises(DataFormatError) as excinfo:
        read_labelled(p)
    assert_error_at(excinfo, p, 2)
    assert "utf-8" in str(excinfo.value).lower()


def test_utf8_bom_is_dropped(tmp_path):
    p = write(tmp_path / "b.tsv", "\ufeff0\tx\n")
    assert read_labelled(p).labels == ["0"]


UNICODE_LINES = "0\tcaf\u00e9 \u2013 first\n1\tsecond \u4e2d\n" * 300


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-be", "utf-32", "utf-32-be"])
@pytest.mark.parametrize("encoding", ["auto", "utf-8"])
def test_utf16_and_utf32_with_a_byte_order_mark_are_decoded(tmp_path, codec, encoding):
    """A UTF-16/32 byte-order mark names the encoding (its bytes cannot start
    UTF-8): such files read as their mark says, not as 600 'no tab' lines."""
    data = UNICODE_LINES.encode(codec)
    if not data.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")):
        data = ("\ufeff" + UNICODE_LINES).encode(codec)  # the -be codecs write no mark
    p = write(tmp_path / "u.tsv", data)
    read = read_labelled(p, encoding=encoding)
    assert read.texts[:2] == ["caf\u00e9 \u2013 first", "second \u4e2d"]
    assert len(read) == 600 and read.encoding in ("utf-16", "utf-32")


def test_a_byte_order_mark_against_an_explicit_encoding_names_the_encoding(tmp_path):
    p = write(tmp_path / "u.tsv", UNICODE_LINES.encode("utf-16"))
    assert "the file is UTF-16 LE (it starts with that byte-order mark), not cp1252" in read_error(
        p, 1, encoding="cp1252")


def test_utf16_without_a_byte_order_mark_is_named(tmp_path):
    p = write(tmp_path / "u.tsv", UNICODE_LINES.encode("utf-16-le"))
    assert "looks like UTF-16 LE without a byte-order mark" in read_error(p, 1, encoding="auto")
    assert read_labelled(p, encoding="utf-16-le").texts[0] == "caf\u00e9 \u2013 first"


def test_tsv_header_row_is_named(tmp_path):
    p = write(tmp_path / "train.tsv", "\nlabel\ttext\n0\tgood\n")
    assert "looks like a header row, but TSV files have none" in read_error(p, 2)
    # the same words further down are data
    assert read_labelled(write(p, "0\tgood\nlabel\ttext\n")).labels == ["0", "label"]


def test_lines_of_the_examples(tmp_path):
    assert read_labelled(write(tmp_path / "a.tsv", "\n0\ta\n\n1\tb\n")).lines == [2, 4]
    assert read_labelled(write(tmp_path / "a.csv", 'label,text\n0,"a\nb"\n1,c\n')).lines == [2, 4]
    assert read_labelled(write(tmp_path / "a.jsonl", '{"label": 0, "text": "a"}\n\n'
                                                      '{"label": 1, "text": "b"}\n')).lines == [1, 3]


def test_unknown_label_names_file_and_line(tmp_path):
    p = write(tmp_path / "test.tsv", "a\tx\n\nc\ty\n")
    raw = read_labelled(p)
    with pytest.raises(DataFormatError) as excinfo:
        encode_labels(raw.labels, ["a", "b"], path=raw.path, lines=raw.lines, names_from="labels.txt")
    assert_error_at(excinfo, p, 3)
    assert "unknown label 'c'; the class names (ids 0..1, from labels.txt) are ['a', 'b']" in str(
        excinfo.value)


def test_read_texts_plain_lines(tmp_path):
    p = write(tmp_path / "rt.pos", "first review \u2026\r\n\nsecond\n", encoding="cp1252")
    assert read_texts(p, encoding="auto") == ["first review \u2026", "second"]


# ----------------------------------------------------------------------- CSV


def test_csv_header_and_joined_columns(tmp_path):
    p = write(
        tmp_path / "news.csv",
        'label,title,description\n'
        '3,"Title, with comma","Body ""quoted"""\n'
        '\n'
        '1,T2,"multi\nline body"\n',
    )
    data = read_labelled(p, text_column=["title", "description"])
    assert data.labels == ["3", "1"]
    assert data.texts == ['Title, with comma Body "quoted"', "T2 multi\nline body"]
    single = read_labelled(p, text_column="title")
    assert single.texts == ["Title, with comma", "T2"]


def test_csv_missing_column_lists_available(tmp_path):
    p = write(tmp_path / "news.csv", "class,title\n1,x\n")
    with pytest.raises(DataFormatError) as excinfo:
        read_labelled(p)
    message = str(excinfo.value)
    assert "news.csv" in message and "'class'" in message and "'title'" in message


def test_csv_wrong_field_count(tmp_path):
    p = write(tmp_path / "d.csv", 'label,text\n0,"a"\n1,"b\nc"\n2,x,extra\n')
    with pytest.raises(DataFormatError) as excinfo:
        read_labelled(p)
    assert_error_at(excinfo, p, 5)  # the multi-line record spans lines 3-4
    assert "expected 2 fields, found 3" in str(excinfo.value)


def test_csv_empty_label(tmp_path):
    p = write(tmp_path / "d.csv", "label,text\n0,a\n ,b\n")
    with pytest.raises(DataFormatError) as excinfo:
        read_labelled(p)
    assert_error_at(excinfo, p, 3)


def test_csv_bad_quoting(tmp_path):
    p = write(tmp_path / "d.csv", 'label,text\n0,a\n1,"unterminated"x\n')
    with pytest.raises(DataFormatError) as excinfo:
        read_labelled(p)
    assert_error_at(excinfo, p, 3)


def test_csv_without_header(tmp_path):
    content = '"3","Title one","Body one"\n"4","Title two","Body two"\n'
    p = write(tmp_path / "test.csv", content)
    data = read_labelled(p, header=False, label_column=0, text_column=[1, 2])
    assert data.labels == ["3", "4"]
    assert data.texts == ["Title one Body one", "Title two Body two"]
    named = read_labelled(
        p, header=["class", "title", "description"], label_column="class",
        text_column=["title", "description"],
    )
    assert named.texts == data.texts
    with pytest.raises(DataFormatError, match="header=False"):
        read_labelled(p, header=False)  # names cannot be used without a header


# --------------------------------------------------------------------- JSONL


def test_jsonl_good(tmp_path):
    rows = [
        {"label": 0, "id": 7, "rating": 2, "text": "bad"},
        {"label": "pos", "text": "good", "title": "T"},
    ]
    p = write(tmp_path / "d.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n\n")
    data = read_labelled(p)
    assert data.labels == ["0", "pos"]
    assert data.texts == ["bad", "good"]


@pytest.mark.parametrize(
    "bad_line, fragment",
    [
        ('{"label": 1, "text": ', "invalid JSON"),
        ('{"text": "no label"}', "missing key 'label'"),
        ('{"label": 1}', "missing key 'text'"),
        ('{"label": "", "text": "x"}', "empty label"),
        ('{"label": 1, "text": 5}', "must be a string"),
        ("[1, 2]", "expected a JSON object"),
    ],
)
def test_jsonl_malformed(tmp_path, bad_line, fragment):
    good = json.dumps({"label": 0, "text": "fine"})
    p = write(tmp_path / "d.jsonl", f"{good}\n\n{good}\n{bad_line}\n")
    with pytest.raises(DataFormatError) as excinfo:
        read_labelled(p)
    assert_error_at(excinfo, p, 4)
    assert fragment in str(excinfo.value)


def test_jsonl_custom_keys(tmp_path):
    p = write(tmp_path / "d.jsonl", json.dumps({"y": "a", "q": "one", "r": "two"}) + "\n")
    data = read_labelled(p, text_column=["q", "r"], label_column="y")
    assert data.texts == ["one two"] and data.labels == ["a"]


# -------------------------------------------------------------------- labels


def test_encode_labels_integers_without_names():
    ids, names = encode_labels(["1", "0", "2", "1"])
    assert ids.dtype == np.int32
    assert ids.tolist() == [1, 0, 2, 1]
    assert names == ["0", "1", "2"]


def test_encode_labels_strings_without_names():
    ids, names = encode_labels(["pos", "neg", "pos"])
    assert names == ["neg", "pos"]
    assert ids.tolist() == [1, 0, 1]


def test_encode_labels_non_contiguous_integers_sort_numerically():
    ids, names = encode_labels(["10", "2", "4", "2"])
    assert names == ["2", "4", "10"]
    assert ids.tolist() == [2, 0, 1, 0]


def test_encode_labels_with_names():
    names = ["DESC", "ENTY", "ABBR"]
    ids, out = encode_labels(["0", "2", "ENTY", "ABBR"], names)
    assert out == names
    assert ids.tolist() == [0, 2, 1, 2]
    with pytest.raises(ValueError) as excinfo:
        encode_labels(["0", "3"], names)
    assert "'3'" in str(excinfo.value) and "DESC" in str(excinfo.value)
    with pytest.raises(ValueError, match="ABBR"):
        encode_labels(["LOC"], names)


def test_encode_labels_integer_like_names_match_by_name():
    # AG News style: classes written 1..4 in the file, names "1".."4".
    ids, _ = encode_labels(["1", "4", "3"], ["1", "2", "3", "4"])
    assert ids.tolist() == [0, 3, 2]


def test_read_label_names_both_layouts(tmp_path):
    plain = write(tmp_path / "plain.txt", "neg\npos\n")
    assert read_label_names(plain) == ["neg", "pos"]
    with_ids = write(tmp_path / "ids.txt", "1\tpos\n0\tneg\n")
    assert read_label_names(with_ids) == ["neg", "pos"]
    dup = write(tmp_path / "dup.txt", "a\nb\na\n")
    with pytest.raises(DataFormatError) as excinfo:
        read_label_names(dup)
    assert_error_at(excinfo, dup, 3)
    gap = write(tmp_path / "gap.txt", "0\ta\n2\tb\n")
    with pytest.raises(DataFormatError, match="missing ids"):
        read_label_names(gap)


def test_find_label_names(tmp_path):
    data = write(tmp_path / "train.tsv", "0\tx\n")
    assert find_label_names(data) is None
    write(tmp_path / "labels.txt", "0\tneg\n1\tpos\n")
    assert find_label_names(data) == ["neg", "pos"]


# ---------------------------------------------------------- real shared data


@needs_data
def test_real_trec_train():
    path = DATA / "trec" / "train.tsv"
    data = read_labelled(path)
    assert len(data) == 5452
    ids, names = encode_labels(data.labels, find_label_names(path))
    assert names == ["DESC", "ENTY", "ABBR", "HUM", "LOC", "NUM"]
    assert ids.min() == 0 and ids.max() == 5


@needs_data
def test_real_imdb_train_jsonl():
    path = DATA / "imdb" / "train.jsonl"
    data = read_labelled(path)
    assert len(data) == 25000
    assert set(data.labels) == {"0", "1"}
    assert any("\u0085" in t for t in data.texts)  # the splitlines() trap is real here
    assert find_label_names(path) == ["neg", "pos"]


@needs_data
def test_real_ag_news_headerless_csv():
    path = DATA / "ag_news" / "test.csv"
    with pytest.raises(DataFormatError, match="header=False"):
        read_labelled(path)
    data = read_labelled(path, header=False, label_column=0, text_column=[1, 2])
    assert len(data) == 7600
    ids, names = encode_labels(data.labels)
    assert names == ["1", "2", "3", "4"]
    assert np.bincount(ids).tolist() == [1900] * 4


@needs_data
def test_real_mr_cp1252():
    path = DATA / "mr" / "orig" / "rt-polarity.pos"
    with pytest.raises(DataFormatError):
        read_texts(path)
    assert len(read_texts(path, encoding="auto")) == 5331
