"""The tokenizer and TextPreprocessor: deterministic vocabulary, the same ids
in training, in classifier.keras and at export, per-batch padding, buckets."""

import numpy as np
import pytest

import keras
import tensorflow as tf

from keras_posattn.preprocessing import STANDARDIZE_OPTIONS
from keras_posattn.preprocessing import TextPreprocessor
from keras_posattn.preprocessing import count_tokens
from keras_posattn.preprocessing import tokenize

TEXTS = [
    "The cat sat on the mat.",
    "The dog sat, the DOG barked!",
    "a zebra",
    "Bird bird apple",
]


def ids(pre, texts):
    return np.asarray(pre(tf.constant(texts)))


def test_vocabulary_order_frequency_then_alphabetical():
    vocab = TextPreprocessor.from_texts(TEXTS).vocabulary
    assert vocab[:2] == ["", "[UNK]"]
    # the:4; bird/dog/sat:2 (alphabetical); then count-1 words alphabetically
    assert vocab[2:] == [
        "the", "bird", "dog", "sat",
        "a", "apple", "barked", "cat", "mat", "on", "zebra",
    ]


def test_deterministic_and_order_independent():
    first = TextPreprocessor.from_texts(TEXTS).vocabulary
    again = TextPreprocessor.from_texts(TEXTS).vocabulary
    shuffled = TextPreprocessor.from_texts(TEXTS[::-1]).vocabulary
    assert first == again == shuffled


def test_every_training_token_is_known():
    # The vocabulary is counted on exactly the tokens the layer produces.
    texts = TEXTS + ["Caf\u00e9 na\u00efve -- it's  spaced\ttabs\u00a0nbsp", "[unk] x \u0085 y"]
    for standardize in STANDARDIZE_OPTIONS:
        pre = TextPreprocessor.from_texts(texts, standardize=standardize)
        assert not (ids(pre, texts) == 1).any(), standardize


def test_literal_unk_token_is_not_duplicated():
    pre = TextPreprocessor.from_texts(["[UNK] a a"], standardize=None)
    assert pre.vocabulary == ["", "[UNK]", "a"]
    assert ids(pre, ["[UNK] a"])[0].tolist() == [1, 2]


def test_standardize_options_and_tokenize():
    assert tokenize(["Hello, World!"]) == [["hello", "world"]]
    assert tokenize(["Hello,World!"], standardize="lower_and_strip_punctuation") == [
        ["helloworld"]]
    assert tokenize(["Hello, World!"], standardize="lower") == [["hello,", "world!"]]
    assert tokenize(["Hello, World!"], standardize=None) == [["Hello,", "World!"]]
    assert tokenize(["ab"], split="character") == [["a", "b"]]
    pre = TextPreprocessor.from_texts(["Hello, World!"], standardize="lower")
    assert set(pre.vocabulary[2:]) == {"hello,", "world!"}
    assert pre.tokenize(["Hello, World!"]) == [["hello,", "world!"]]
    with pytest.raises(ValueError, match="standardize"):
        TextPreprocessor.from_texts(TEXTS, standardize="upper")


def test_punctuation_is_a_word_boundary_by_default():
    # TextVectorization's standardisation deletes punctuation: "movie.The"
    # became the unknown word "moviethe", "3.5" became "35".
    pre = TextPreprocessor.from_texts(["the movie", "the end what", "3 5"])
    got = ids(pre, ["movie.The end...what?", "3.5"])
    assert (got[0, :4] > 1).all(), got
    assert pre.tokenize(["movie.The end...what?"]) == [["movie", "the", "end", "what"]]
    assert pre.tokenize(["3.5"]) == [["3", "5"]]
    assert tokenize(["movie.The"], standardize="lower_and_strip_punctuation") == [["moviethe"]]


def test_default_standardisation_splits_clitics_tags_and_symbols():
    assert tokenize(["I don't think it's bad, CAN'T you’re wrong"]) == [
        ["i", "do", "n't", "think", "it", "'s", "bad", "ca", "n't", "you", "'re", "wrong"]]
    # PTB-tokenised text (SST) keeps its clitics as they are.
    assert tokenize(["it 's not bad , it does n't -lrb- fail -rrb-"]) == [
        ["it", "'s", "not", "bad", "it", "does", "n't", "lrb", "fail", "rrb"]]
    assert tokenize(["Good.<br /><br />Bad<BR / >end<br>x"]) == [
        ["good", "bad", "end", "x"]]
    assert tokenize(["'quoted' e-mail x_y \u00a0nbsp \U0001F600ok"]) == [
        ["quoted", "e", "mail", "x", "y", "nbsp", "ok"]]
    assert tokenize(["Ab.Cd"], standardize="split_punctuation") == [["Ab", "Cd"]]


def test_lowercase_is_unicode():
    # tf.strings.lower alone lowercases ASCII only.
    for standardize in ("lower_and_split_punctuation", "lower_and_strip_punctuation", "lower"):
        assert tokenize(["\u00dcn\u00efc\u00f6d\u00e9 \u0394\u0399\u039a"],
                        standardize=standardize) == [
            ["\u00fcn\u00efc\u00f6d\u00e9", "\u03b4\u03b9\u03ba"]], standardize
    pre = TextPreprocessor.from_texts(["\u00fcber"])
    assert ids(pre, ["\u00dcBER"])[0].tolist() == [2]


def test_invalid_utf8_is_replaced_not_an_error():
    for standardize in STANDARDIZE_OPTIONS[:-1]:
        pre = TextPreprocessor.from_texts(["good film"], standardize=standardize)
        out = ids(pre, [b"good \xff\xfe film", b"\xc3"])
        assert out.shape[0] == 2 and out[0, 0] == pre.vocabulary.index("good"), standardize


def test_pads_to_the_batch_not_to_max_length():
    pre = TextPreprocessor.from_texts(TEXTS)
    assert pre.max_length == 6  # the longest training text
    assert ids(pre, ["the"]).shape == (1, 1)
    assert ids(pre, ["the", "the cat sat"]).tolist() == [[2, 0, 0], [2, 9, 5]]
    # An empty string (or a batch of them) is one padding position, not zero.
    assert ids(pre, [""]).tolist() == [[0]]
    fixed = TextPreprocessor(pre.vocabulary, max_length=6, pad_to_max_length=True)
    assert ids(fixed, ["the", ""]).shape == (2, 6)


def test_max_length_explicit_cap_and_percentile():
    texts = ["w " * n for n in range(1, 11)]  # lengths 1..10
    assert TextPreprocessor.from_texts(texts, max_length=3).max_length == 3
    assert TextPreprocessor.from_texts(texts, length_cap=4).max_length == 4
    pre = TextPreprocessor.from_texts(texts, length_percentile=50)
    assert pre.max_length == 6  # ceil(5.5)
    out = ids(pre, ["w " * 10])
    assert out.shape == (1, 6) and (out == 2).all()  # truncated


def test_min_count_and_max_tokens_map_to_unk():
    pre = TextPreprocessor.from_texts(TEXTS, min_count=2)
    assert pre.vocabulary == ["", "[UNK]", "the", "bird", "dog", "sat"]
    assert ids(pre, ["the zebra sat"])[0].tolist() == [2, 1, 5]
    assert TextPreprocessor.from_texts(TEXTS, max_tokens=4).vocabulary == ["", "[UNK]", "the", "bird"]


def test_count_tokens_lengths():
    counts, lengths = count_tokens(TEXTS)
    assert counts["the"] == 4
    assert lengths.tolist() == [6, 6, 2, 3]


def test_inputs_of_any_batch_form():
    pre = TextPreprocessor.from_texts(TEXTS)
    expected = ids(pre, ["the cat"])
    np.testing.assert_array_equal(np.asarray(pre("the cat")), expected)
    np.testing.assert_array_equal(np.asarray(pre(tf.constant([["the cat"]]))), expected)
    np.testing.assert_array_equal(np.asarray(pre(np.array(["the cat"]))), expected)


def test_keras_file_round_trip(tmp_path):
    pre = TextPreprocessor.from_texts(TEXTS, max_length=5)
    inputs = keras.Input(shape=(), dtype="string")
    model = keras.Model(inputs, pre(inputs))
    path = tmp_path / "pre.keras"
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    sample = tf.constant(TEXTS + ["unknown words only", ""])
    np.testing.assert_array_equal(np.asarray(model(sample)), np.asarray(loaded(sample)))
    layer = loaded.layers[-1]
    assert isinstance(layer, TextPreprocessor)
    assert layer.get_config() == pre.get_config()


def test_layer_is_ready_for_export():
    # A vocabulary= TextVectorization must have been called before
    # ExportArchive.track(); the preprocessor does it when it is made.
    archive = keras.export.ExportArchive()
    archive.track(TextPreprocessor.from_texts(TEXTS))


def test_token_ids_are_the_call_path_unpadded():
    pre = TextPreprocessor.from_texts(TEXTS, max_length=4)
    ragged = pre.token_ids(TEXTS + [""])
    assert ragged.row_lengths().numpy().tolist() == [4, 4, 2, 3, 0]
    dense = ids(pre, TEXTS)
    for row, expected in zip(ragged.to_list(), dense.tolist()):
        assert expected[: len(row)] == row
    assert pre.display_tokens(dense[2]) == ["a", "zebra"]


def test_dataset_buckets_shuffles_and_keeps_every_example():
    rng = np.random.default_rng(0)
    texts = [" ".join(f"w{i}" for i in rng.integers(0, 30, size=n))
             for n in rng.integers(0, 40, size=500)]
    labels = np.arange(500)
    pre = TextPreprocessor.from_texts(texts)
    assert pre.bucket_widths() == [8, 16, pre.max_length]
    ds = pre.dataset(texts, labels, 32, shuffle_seed=3)
    batches = list(ds)
    assert ds.cardinality().numpy() == len(batches)
    seen = np.concatenate([y.numpy() for _, y in batches])
    assert sorted(seen.tolist()) == labels.tolist()  # every example once
    assert {x.shape[1] for x, _ in batches} <= set(pre.bucket_widths())
    lengths = pre.token_ids(texts).row_lengths().numpy()
    for x, y in batches:  # each example fits its batch, padded with zeros only
        for row, label in zip(x.numpy(), y.numpy()):
            assert (row != 0).sum() <= lengths[label] <= x.shape[1]
    # Seeded: the same seed gives the same order; epochs reshuffle.
    again = [y.numpy().tolist() for _, y in pre.dataset(texts, labels, 32, shuffle_seed=3)]
    assert again == [y.numpy().tolist() for _, y in batches]
    second_epoch = [y.numpy().tolist() for _, y in ds]
    assert second_epoch != again
    fixed = pre.dataset(texts, labels, 32, buckets=False)
    assert {x.shape[1] for x, _ in fixed} == {pre.max_length}


def test_bad_vocabularies_and_inputs_rejected():
    with pytest.raises(ValueError):
        TextPreprocessor.from_texts([])
    with pytest.raises(ValueError, match="min_count"):
        TextPreprocessor.from_texts(["a b"], min_count=5)
    with pytest.raises(TypeError):
        TextPreprocessor.from_texts("just one string")
    with pytest.raises(ValueError, match="padding token"):
        TextPreprocessor(["a", "b", "c"])
