"""DocumentPreprocessor: documents -> sentences -> words inside the graph,
limits at both levels, empty sentences and documents, the same ids in a
.keras file and in a SavedModel, buckets at both levels."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_posattn.preprocessing import (
    DocumentPreprocessor,
    TextPreprocessor,
    split_sentences,
)

DOCS = [
    "The film was good. The music was great!",
    "Too long?! I think so... But fine.",
    "One sentence only",
    "Line one\nline two<br />line three<BR>four",
]


def sentences(text):
    return [s.decode() for s in split_sentences(tf.constant([text]))[0].numpy()]


def test_split_sentences():
    assert sentences("Good. Really good!") == ["Good.", "Really good!"]
    assert sentences("Too long?! I think so... But fine.") == ["Too long?!", "I think so...",
                                                                "But fine."]
    assert sentences('He said "stop." Then left.') == ['He said "stop."', "Then left."]
    assert sentences("a<br />b<br>c\nd\r\ne") == ["a", "b", "c", "d", "e"]
    assert sentences("Why? Because.") == ["Why?", "Because."]
    # IMDB's spaced tags end a sentence too, leaving no "br" word behind.
    assert sentences("Good.<br / >Bad<BR />x") == ["Good.", "Bad", "x"]
    # No white space after the mark: not a boundary (numbers, URLs).
    assert sentences("pi is 3.14 and e.g.x") == ["pi is 3.14 and e.g.x"]
    assert sentences("") == [""]


def test_ids_by_sentence_and_vocabulary_matches_flat():
    pre = DocumentPreprocessor.from_texts(DOCS)
    # The same words as a flat preprocessor's (sentence splitting does not
    # change the tokens; <br> tags, the 4th document's, are not words here).
    assert (sorted(DocumentPreprocessor.from_texts(DOCS[:3]).vocabulary)
            == sorted(TextPreprocessor.from_texts(DOCS[:3]).vocabulary))
    ids = pre(DOCS).numpy()
    assert ids.shape == (4, 4, 4)  # 4 sentences at most, 4 words at most
    words = [[[pre.vocabulary[i] for i in row if i] for row in doc] for doc in ids]
    assert words[0] == [["the", "film", "was", "good"], ["the", "music", "was", "great"], [], []]
    assert words[1] == [["too", "long"], ["i", "think", "so"], ["but", "fine"], []]
    assert words[3] == [["line", "one"], ["line", "two"], ["line", "three"], ["four"]]
    assert not (ids == 1).any()


def test_empty_sentences_dropped_and_empty_document():
    pre = DocumentPreprocessor.from_texts(DOCS)
    ids = pre(["...  !!! Good film.", "", "?!"]).numpy()
    # "..." and "!!!" have no token: dropped, so "good film" is sentence 0.
    assert ids.shape == (3, 1, 2)
    assert ids[0, 0].tolist() == [pre.vocabulary.index("good"), pre.vocabulary.index("film")]
    assert (ids[1:] == 0).all()
    # An empty batch element alone still gives one padding sentence of one word.
    assert pre([""]).numpy().shape == (1, 1, 1)


def test_limits_truncate_both_levels():
    pre = DocumentPreprocessor.from_texts(DOCS, max_length=2, max_sentences=3)
    assert pre.model_sizes() == {"max_length": 2, "max_sentences": 3}
    ids = pre(["a b c. d e f. g h. i j. k"]).numpy()
    assert ids.shape == (1, 3, 2)
    padded = DocumentPreprocessor.from_texts(DOCS, max_length=5, max_sentences=6,
                                             pad_to_max_length=True)
    assert padded(["one. two"]).numpy().shape == (1, 6, 5)


def test_automatic_limits_are_percentiles():
    docs = [". ".join(["w"] * n) + "." for n in range(1, 101)]  # 1 to 100 sentences
    pre = DocumentPreprocessor.from_texts(docs)
    assert pre.max_sentences == 64  # the 95th percentile (95) capped at 64
    pre = DocumentPreprocessor.from_texts(docs, sentences_cap=None)
    assert pre.max_sentences == int(np.ceil(np.percentile(np.arange(1, 101), 95)))
    assert pre.max_length == 1


def test_tokenize_and_display_tokens():
    pre = DocumentPreprocessor.from_texts(DOCS)
    assert pre.tokenize(["Good film. Bad music!"]) == [["good", "film", "bad", "music"]]
    ids = pre(["The film was good. The music was great!"]).numpy()[0]
    assert pre.display_tokens(ids, words=2) == ["the film …", "the music …"]


def test_keras_file_round_trip_and_saved_model(tmp_path):
    pre = DocumentPreprocessor.from_texts(DOCS, max_sentences=3)
    inputs = keras.Input(shape=(), dtype="string")
    model = keras.Model(inputs, pre(inputs))
    path = tmp_path / "pre.keras"
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    np.testing.assert_array_equal(loaded(tf.constant(DOCS)), pre(DOCS))
    assert loaded.layers[-1].get_config() == pre.get_config()

    module = tf.Module()
    module.pre = pre
    module.f = tf.function(lambda x: pre(x), input_signature=[tf.TensorSpec([None], tf.string)])
    tf.saved_model.save(module, str(tmp_path / "sm"))
    restored = tf.saved_model.load(str(tmp_path / "sm"))
    np.testing.assert_array_equal(restored.f(tf.constant(DOCS + [""])).numpy(),
                                  pre(DOCS + [""]).numpy())


def test_dataset_buckets_both_levels_and_keeps_every_example():
    rng = np.random.default_rng(0)
    docs = [". ".join(" ".join(["w"] * int(rng.integers(1, 30)))
                      for _ in range(int(rng.integers(1, 20)))) for _ in range(200)]
    labels = np.arange(200) % 3
    pre = DocumentPreprocessor.from_texts(docs, max_sentences=16, max_length=20)
    ds = pre.dataset(docs, labels, batch_size=16, shuffle_seed=1)
    seen, shapes = [], set()
    for x, y in ds:
        shapes.add(tuple(x.shape[1:]))
        assert x.shape[1] in pre.bucket_widths(smallest=4, maximum=16)
        assert x.shape[2] in pre.bucket_widths()
        seen.extend(y.numpy().tolist())
    assert sorted(seen) == sorted(labels.tolist())
    assert len(ds) == sum(1 for _ in ds)
    assert len(shapes) <= 8
    plain = pre.dataset(docs, labels, batch_size=50, buckets=False)
    assert {tuple(x.shape[1:]) for x, _ in plain} == {(16, 20)}


def test_bad_arguments():
    with pytest.raises(ValueError, match="max_sentences"):
        DocumentPreprocessor(["", "[UNK]", "a"], max_sentences=0)


def test_long_sentences_are_read_as_pieces_not_truncated():
    # R8-like text: no sentence punctuation, one long "sentence".
    words = [f"w{i}" for i in range(23)]
    docs = [" ".join(words), "short one. " + " ".join(words[:7]) + "!", ""]
    longest = dict(length_percentile=None, sentences_percentile=None)
    whole = DocumentPreprocessor.from_texts(docs, **longest)
    pieces = DocumentPreprocessor.from_texts(docs, piece_length=5, **longest)
    assert (whole.max_sentences, whole.max_length) == (2, 23)
    ids = pieces(docs).numpy()
    flat = whole(docs[:1]).numpy()[0, 0]
    # The 23 words become pieces of 5, 5, 5, 5 and 3 words, in order, none lost.
    assert pieces.max_length == 5
    assert ids.shape[1] >= 5
    got = [row[row != 0].tolist() for row in ids[0] if (row != 0).any()]
    assert [len(r) for r in got] == [5, 5, 5, 5, 3]
    assert sum(got, []) == flat.tolist()
    # A sentence exactly piece_length long stays one piece; "short one." is one,
    # the 7-word sentence two (5 + 2); the empty document has none.
    second = [row[row != 0].tolist() for row in ids[1] if (row != 0).any()]
    assert [len(r) for r in second] == [2, 5, 2]
    assert not ids[2].any()
    # The automatic limits count pieces: the longest document has 5.
    assert pieces.max_sentences == 5
    # Serialised with the rest of the config.
    again = DocumentPreprocessor.from_config(pieces.get_config())
    assert again.piece_length == 5
    np.testing.assert_array_equal(again(docs).numpy(), ids)


def test_pieces_count_like_the_graph():
    from keras_posattn.preprocessing.document_preprocessor import _piece_lengths
    from keras_posattn.preprocessing.document_preprocessor import _pieces_per_sentence

    lengths = np.array([0, 1, 5, 6, 11, 23])
    np.testing.assert_array_equal(_pieces_per_sentence(lengths, 5), [0, 1, 1, 2, 3, 5])
    np.testing.assert_array_equal(_pieces_per_sentence(lengths, None), [0, 1, 1, 1, 1, 1])
    assert sorted(_piece_lengths(lengths, 5).tolist()) == sorted(
        [1, 5, 5, 1, 5, 5, 1, 5, 5, 5, 5, 3])
    assert _piece_lengths(lengths, None).tolist() == [1, 5, 6, 11, 23]
    with pytest.raises(ValueError, match="piece_length"):
        DocumentPreprocessor(["", "[UNK]", "a"], piece_length=0)
