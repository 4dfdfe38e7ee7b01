"""WordPiecePreprocessor: a vocabulary learned deterministically with
tensorflow-text's learner, unseen words as known pieces, TextPreprocessor's
padding and truncation, and the same ids in classifier.keras and at export."""

import doctest
import json
import os
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest

pytest.importorskip("tensorflow_text", reason="the wordpiece extra is not installed")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_posattn import export  # noqa: E402
from keras_posattn import zoo  # noqa: E402
from keras_posattn.models import TextClassifier  # noqa: E402
from keras_posattn.preprocessing import TextPreprocessor  # noqa: E402
from keras_posattn.preprocessing import WordPiecePreprocessor  # noqa: E402
from keras_posattn.preprocessing import wordpiece_preprocessor  # noqa: E402
from keras_posattn.preprocessing.wordpiece_preprocessor import learn_vocabulary  # noqa: E402

TEXTS = [
    "The players played well, and the playing was great.",
    "A replay of the game: the player worked hard.",
    "Workers work; the worker was working late.",
    "Great games are played by great players!",
    "He replayed nothing; the workers played on.",
    "Reworked plays, unplayable games.",
]
# Never seen in training, made of pieces that were.
UNSEEN = ["reworking", "gameplay", "unworkable"]


def ids(pre, texts):
    return np.asarray(pre(tf.constant(texts)))


@pytest.fixture(scope="module")
def pre():
    return WordPiecePreprocessor.from_texts(TEXTS, max_tokens=120)


def tiny_classifier(pre, seed=1):
    keras.utils.set_random_seed(seed)
    model = zoo.build("mpsan", num_classes=3, vocabulary_size=pre.vocabulary_size,
                      embedding_dim=8, max_length=pre.max_length)
    rng = np.random.default_rng(seed)
    for w in model.trainable_weights:  # large weights: outputs far apart
        w.assign(rng.normal(0.0, 1.0, size=tuple(w.shape)).astype("float32"))
    return TextClassifier(pre, model, label_names=["neg", "neu", "pos"])


# ------------------------------------------------------------ vocabulary ---


def test_vocabulary_is_deterministic_and_order_independent(pre):
    again = WordPiecePreprocessor.from_texts(TEXTS, max_tokens=120)
    shuffled = WordPiecePreprocessor.from_texts(TEXTS[::-1], max_tokens=120)
    assert pre.vocabulary == again.vocabulary == shuffled.vocabulary
    assert pre.vocabulary[:2] == ["", "[UNK]"]
    assert len(set(pre.vocabulary)) == len(pre.vocabulary) <= 120
    # Every character of the training words, alone and as a suffix.
    chars = {c for words in pre.tokenize(TEXTS) for w in words for c in w.removeprefix("##")}
    assert chars <= set(pre.vocabulary) and {"##" + c for c in chars} <= set(pre.vocabulary)
    # Pieces longer than a character were learned (it is not a character model).
    assert any(len(t.removeprefix("##")) > 2 for t in pre.vocabulary[2:])


@pytest.mark.parametrize("max_tokens", [9, 30, 57, 120, 400])
def test_vocabulary_size_is_capped(max_tokens):
    vocabulary = WordPiecePreprocessor.from_texts(TEXTS, max_tokens=max_tokens).vocabulary
    assert len(vocabulary) <= max_tokens
    assert vocabulary[:2] == ["", "[UNK]"]
    # Room for one character (and its suffix form): only words spelled with it.
    with pytest.raises(ValueError, match="too small"):
        WordPiecePreprocessor.from_texts(["ab ba"], max_tokens=4)
    assert learn_vocabulary(Counter({"aaa": 2, "ab": 1}), max_tokens=4) == ["", "[UNK]", "a", "##a"]


def test_learner_overshoot_keeps_the_alphabet():
    # Many words seen once each: the threshold search cannot go below 1, so
    # the learner returns more than asked and the rarest long pieces are cut.
    counts = Counter({f"{a}{b}{c}": 1 for a in "abcdef" for b in "ghijkl" for c in "mnop"})
    vocabulary = learn_vocabulary(counts, max_tokens=60)
    assert len(vocabulary) == 60
    alphabet = set("abcdefghijklmnop")
    assert alphabet <= set(vocabulary) and {"##" + c for c in alphabet} <= set(vocabulary)
    assert learn_vocabulary(counts, max_tokens=60) == vocabulary


def test_unseen_word_splits_into_known_pieces(pre):
    for word in UNSEEN:
        assert word not in pre.vocabulary
        assert word not in {w for words in pre.tokenize(TEXTS) for w in words}
        (pieces,) = pre.tokenize([word])
        assert len(pieces) > 1 and "[UNK]" not in pieces, (word, pieces)
        assert "".join(p.removeprefix("##") for p in pieces) == word
        assert pieces[0][:2] != "##" and all(p.startswith("##") for p in pieces[1:])
        assert (ids(pre, [word]) > 1).all()
    # A whole-word vocabulary knows none of them.
    words = TextPreprocessor.from_texts(TEXTS)
    assert (ids(words, UNSEEN) == 1).all()


def test_unknown_characters_make_the_word_unk(pre):
    assert pre.tokenize(["zebra played", "東京"]) == [["[UNK]", "played"], ["[UNK]"]]
    assert ids(pre, ["zebra played"])[0].tolist() == [1, pre.vocabulary.index("played")]


def test_standardisation_is_the_library_tokenizer(pre):
    # Punctuation is a word boundary, lower case, invalid UTF-8 replaced by
    # U+FFFD (a symbol, so a boundary too).
    assert pre.tokenize(["PLAYED.Great", b"played \xff\xfeworked"]) == [
        ["played", "great"], ["played", "worked"]]
    raw = WordPiecePreprocessor.from_texts(["Played well"], standardize=None, max_tokens=30)
    assert raw.tokenize([b"Played \xff well"])[0][0] == "Played"
    with pytest.raises(ValueError, match="split must be 'whitespace'"):
        WordPiecePreprocessor.from_texts(TEXTS, split="character")
    with pytest.raises(ValueError, match="standardize"):
        WordPiecePreprocessor.from_texts(TEXTS, standardize="upper")


# ------------------------------------------------- padding and truncation ---


def test_pads_to_the_batch_and_truncates_like_text_preprocessor(pre):
    full = pre.tokenize(TEXTS)
    assert pre.max_length == max(len(p) for p in full)  # the longest text, in pieces
    assert ids(pre, [""]).tolist() == [[0]]  # one padding position
    assert ids(pre, ["", ""]).shape == (2, 1)
    got = ids(pre, ["played", "the workers played"])
    assert got.shape == (2, 3) and got[0, 1:].tolist() == [0, 0] and (got[1] > 1).all()
    short = WordPiecePreprocessor(pre.vocabulary, max_length=4)
    long_text = " ".join(TEXTS * 2000)  # about 100k pieces
    out = ids(short, [long_text, "played"])
    assert out.shape == (2, 4)
    assert out[0].tolist() == [pre.vocabulary.index(p) for p in full[0][:4]]
    fixed = WordPiecePreprocessor(pre.vocabulary, max_length=7, pad_to_max_length=True)
    assert ids(fixed, ["played", ""]).shape == (2, 7)
    # token_ids: the call path, truncated, unpadded; display_tokens inverts it.
    ragged = short.token_ids(TEXTS + [""])
    assert ragged.row_lengths().numpy().tolist() == [4] * len(TEXTS) + [0]
    assert short.display_tokens(ids(short, TEXTS[:1])[0]) == full[0][:4]
    assert short.piece_counts(TEXTS) == [len(p) for p in full]
    assert WordPiecePreprocessor.from_texts(TEXTS, length_cap=5, max_tokens=120).max_length == 5


def test_inputs_of_any_batch_form(pre):
    expected = ids(pre, ["the player"])
    np.testing.assert_array_equal(np.asarray(pre("the player")), expected)
    np.testing.assert_array_equal(np.asarray(pre(tf.constant([["the player"]]))), expected)
    np.testing.assert_array_equal(np.asarray(pre(np.array(["the player"]))), expected)


def test_dataset_buckets_keep_every_example(pre):
    labels = np.arange(len(TEXTS))
    batches = list(pre.dataset(TEXTS, labels, 4, shuffle_seed=1))
    assert sorted(np.concatenate([y.numpy() for _, y in batches]).tolist()) == labels.tolist()
    assert {x.shape[1] for x, _ in batches} <= set(pre.bucket_widths())
    assert pre.model_sizes() == {"max_length": pre.max_length}
    assert pre.input_rank == 1 and pre.input_name == "token_ids"
    assert pre.needs_tensorflow_text and not TextPreprocessor.needs_tensorflow_text


def test_bad_arguments_rejected(pre):
    with pytest.raises(ValueError):
        WordPiecePreprocessor.from_texts([])
    with pytest.raises(ValueError, match="max_tokens"):
        WordPiecePreprocessor.from_texts(TEXTS, max_tokens=3)
    with pytest.raises(ValueError, match="no word"):
        WordPiecePreprocessor.from_texts(["", " ... "])
    with pytest.raises(ValueError, match="padding"):
        WordPiecePreprocessor(["[UNK]", "a", "##a"])
    with pytest.raises(ValueError, match="repeated"):
        WordPiecePreprocessor(["", "[UNK]", "a", "a"])


def test_missing_tensorflow_text_is_one_clear_error(monkeypatch, pre):
    monkeypatch.setitem(sys.modules, "tensorflow_text", None)
    with pytest.raises(ImportError, match=r"pip install 'keras-posattn\[wordpiece\]'"):
        WordPiecePreprocessor(pre.vocabulary)


def test_docstring_examples():
    assert doctest.testmod(wordpiece_preprocessor).failed == 0


# ----------------------------------------------- classifier.keras, export ---


def test_keras_file_round_trip_safe_mode(pre, tmp_path):
    classifier = tiny_classifier(pre)
    path = tmp_path / "classifier.keras"
    classifier.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    assert isinstance(loaded.preprocessor, WordPiecePreprocessor)
    assert loaded.preprocessor.get_config() == pre.get_config()
    texts = TEXTS + UNSEEN + ["", "zebra"]
    np.testing.assert_array_equal(loaded.predict_probabilities(texts),
                                  classifier.predict_probabilities(texts))
    rebuilt = WordPiecePreprocessor.from_config(pre.get_config())
    np.testing.assert_array_equal(ids(rebuilt, texts), ids(pre, texts))


@pytest.fixture(scope="module")
def exported(pre, tmp_path_factory):
    classifier = tiny_classifier(pre)
    path = export.export_saved_model(classifier, name="wordpiece",
                                     base_dir=tmp_path_factory.mktemp("repo"))
    return classifier, path


def test_export_reloads_with_tensorflow_text(exported):
    classifier, path = exported
    texts = TEXTS + UNSEEN + ["", "zebra", "x " * 1000]
    got = export.predict_exported(path, texts)
    np.testing.assert_allclose(got["probabilities"], classifier.predict_probabilities(texts),
                               atol=1e-5)
    vocabulary = (path / "assets" / "vocabulary.txt").read_text(encoding="utf-8").split("\n")
    assert vocabulary[:-1] == classifier.preprocessor.vocabulary
    metadata = json.loads((path / "assets.extra" / "keras_posattn.json").read_text())
    assert metadata["preprocessor"] == "WordPiecePreprocessor"
    assert metadata["requires_tensorflow_text"] is True
    assert metadata["custom_ops"] == ["FastWordpieceTokenizeWithOffsets"]


def test_export_needs_tensorflow_text_ops_only_for_wordpiece(exported, tmp_path):
    """In a fresh process: the library imports without tensorflow-text; the
    export's only op unknown to core TensorFlow is the WordPiece one, and it
    does not load until ``import tensorflow_text``; ``predict_exported``
    (``ExportedModel``) imports it itself, as the export's metadata asks."""
    _, path = exported
    from tensorflow.core.protobuf import saved_model_pb2

    saved_model = saved_model_pb2.SavedModel.FromString((path / "saved_model.pb").read_bytes())
    graphs = [g.graph_def for g in saved_model.meta_graphs]
    functions = {f.signature.name for g in graphs for f in g.library.function}
    ops = {n.op for g in graphs for n in g.node}
    ops |= {n.op for g in graphs for f in g.library.function for n in f.node_def}
    code = r"""
import sys
import keras_posattn.export, keras_posattn.models, keras_posattn.preprocessing
print("IMPORTED TF TEXT" if "tensorflow_text" in sys.modules else "NO TF TEXT")
import tensorflow as tf
from tensorflow.python.framework import op_def_registry
print("UNKNOWN:" + ",".join(o for o in sys.argv[2:] if op_def_registry.get(o) is None))
try:
    tf.saved_model.load(sys.argv[1])
    print("LOADED WITHOUT TF TEXT")
except Exception:
    print("FAILED WITHOUT TF TEXT")
probabilities = keras_posattn.export.predict_exported(sys.argv[1], ["the game"])["probabilities"]
print("PROBABILITIES", probabilities.sum())
"""
    proc = subprocess.run([sys.executable, "-c", code, str(path), *sorted(ops - functions)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.split("\n")
    assert lines[0] == "NO TF TEXT", proc.stdout
    assert "UNKNOWN:FastWordpieceTokenizeWithOffsets" in lines, proc.stdout
    assert "FAILED WITHOUT TF TEXT" in lines, proc.stdout
    total = float(next(line for line in lines if line.startswith("PROBABILITIES")).split()[1])
    assert abs(total - 1.0) < 1e-5
