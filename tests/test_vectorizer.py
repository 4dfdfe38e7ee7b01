"""Tests for keras_posattn.text.vectorizer (deterministic TextVectorization)."""

import numpy as np
import pytest

import keras
import tensorflow as tf

from keras_posattn.text import (
    build_vectorizer,
    count_tokens,
    tokenize,
    vectorizer_vocabulary,
)

TEXTS = [
    "The cat sat on the mat.",
    "The dog sat, the DOG barked!",
    "a zebra",
    "Bird bird apple",
]


def ids(layer, texts):
    return np.asarray(layer(tf.constant(texts)))


def test_vocabulary_order_frequency_then_alphabetical():
    vec = build_vectorizer(TEXTS)
    vocab = vectorizer_vocabulary(vec)
    assert vocab[:2] == ["", "[UNK]"]
    # the:4; bird/dog/sat:2 (alphabetical); then count-1 words alphabetically
    assert vocab[2:] == [
        "the", "bird", "dog", "sat",
        "a", "apple", "barked", "cat", "mat", "on", "zebra",
    ]


def test_deterministic_and_order_independent():
    first = vectorizer_vocabulary(build_vectorizer(TEXTS))
    again = vectorizer_vocabulary(build_vectorizer(TEXTS))
    shuffled = vectorizer_vocabulary(build_vectorizer(TEXTS[::-1]))
    assert first == again == shuffled


def test_every_training_token_is_known():
    # The vocabulary is counted on exactly the tokens the layer produces.
    texts = TEXTS + ["Caf\u00e9 na\u00efve -- it's  spaced\ttabs\u00a0nbsp", "[unk] x \u0085 y"]
    for standardize in ("lower_and_strip_punctuation", "lower", "strip_punctuation", None):
        vec = build_vectorizer(texts, standardize=standardize)
        out = ids(vec, texts)
        assert not (out == 1).any(), standardize


def test_literal_unk_token_is_not_duplicated():
    vec = build_vectorizer(["[UNK] a a"], standardize=None)
    assert vectorizer_vocabulary(vec) == ["", "[UNK]", "a"]
    assert ids(vec, ["[UNK] a"])[0].tolist() == [1, 2, 0]


def test_standardize_options_and_tokenize():
    assert tokenize(["Hello, World!"]) == [["hello", "world"]]
    assert tokenize(["Hello, World!"], standardize="lower") == [["hello,", "world!"]]
    assert tokenize(["Hello, World!"], standardize=None) == [["Hello,", "World!"]]
    assert tokenize(["ab"], split="character") == [["a", "b"]]
    vocab = vectorizer_vocabulary(build_vectorizer(["Hello, World!"], standardize="lower"))
    assert set(vocab[2:]) == {"hello,", "world!"}
    with pytest.raises(ValueError, match="standardize"):
        build_vectorizer(TEXTS, standardize="upper")


def test_max_length_default_is_longest_text():
    vec = build_vectorizer(TEXTS)
    assert vec.get_config()["output_sequence_length"] == 6
    assert ids(vec, ["the"]).shape == (1, 6)


def test_max_length_explicit_and_percentile():
    texts = ["w " * n for n in range(1, 11)]  # lengths 1..10
    assert build_vectorizer(texts, max_length=3).get_config()["output_sequence_length"] == 3
    vec = build_vectorizer(texts, length_percentile=50)
    assert vec.get_config()["output_sequence_length"] == 6  # ceil(5.5)
    out = ids(vec, ["w " * 10])
    assert out.shape == (1, 6) and (out == 2).all()  # truncated
    with pytest.raises(ValueError):
        build_vectorizer(texts, max_length=3, length_percentile=50)


def test_min_count_and_max_tokens_map_to_unk():
    vec = build_vectorizer(TEXTS, min_count=2)
    assert vectorizer_vocabulary(vec) == ["", "[UNK]", "the", "bird", "dog", "sat"]
    assert ids(vec, ["the zebra sat"])[0, :3].tolist() == [2, 1, 5]
    small = build_vectorizer(TEXTS, max_tokens=4)
    assert vectorizer_vocabulary(small) == ["", "[UNK]", "the", "bird"]


def test_count_tokens_lengths():
    counts, lengths = count_tokens(TEXTS)
    assert counts["the"] == 4
    assert lengths.tolist() == [6, 6, 2, 3]


def test_keras_file_round_trip(tmp_path):
    vec = build_vectorizer(TEXTS, max_length=5)
    inputs = keras.Input(shape=(), dtype="string")
    model = keras.Model(inputs, vec(inputs))
    path = tmp_path / "vec.keras"
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    sample = tf.constant(TEXTS + ["unknown words only", ""])
    np.testing.assert_array_equal(np.asarray(model(sample)), np.asarray(loaded(sample)))
    assert vectorizer_vocabulary(loaded.layers[-1]) == vectorizer_vocabulary(vec)


def test_sequential_round_trip(tmp_path):
    vec = build_vectorizer(TEXTS)
    model = keras.Sequential([keras.Input(shape=(), dtype="string"), vec])
    path = tmp_path / "seq.keras"
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    sample = tf.constant(TEXTS)
    np.testing.assert_array_equal(np.asarray(model(sample)), np.asarray(loaded(sample)))


def test_layer_is_built_for_export():
    # A vocabulary= layer must have been called before ExportArchive.track().
    vec = build_vectorizer(TEXTS)
    assert vec.built
    archive = keras.export.ExportArchive()
    archive.track(vec)


def test_empty_inputs_rejected():
    with pytest.raises(ValueError):
        build_vectorizer([])
    with pytest.raises(ValueError, match="min_count"):
        build_vectorizer(["a b"], min_count=5)
    with pytest.raises(TypeError):
        build_vectorizer("just one string")
