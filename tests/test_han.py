"""HAN: the shared model checks on multi-sentence documents, Yang et al.'s
sizes, and the batched, padded model against HAN written from stock Keras
layers run on one document at a time."""

import keras
import numpy as np
import pytest
from model_checks import one_document, run_model_test, sample_documents, to_numpy

from keras_posattn import zoo
from keras_posattn.preprocessing import DocumentPreprocessor
from keras_posattn.utils import count_parameters
from keras_posattn_reference import build_reference


def small_model(seed=0, **overrides):
    keras.utils.set_random_seed(seed)
    config = dict(num_classes=3, vocabulary_size=40, embedding_dim=8, units=6,
                  attention_units=5)
    config.update(overrides)
    return zoo.build("han", **config)


def test_shared_model_checks():
    run_model_test("han", {"embedding_dim": 12, "units": 8, "dropout": 0.2},
                   texts=sample_documents(8))


def test_parameter_count():
    """200-d words, GRU 50 per direction (Keras' reset_after GRU: two bias
    vectors per gate), attention 100, 5 classes (module docstring)."""
    model = zoo.build("han")
    word_gru = 2 * 3 * (50 * (200 + 50) + 2 * 50)
    sentence_gru = 2 * 3 * (50 * (100 + 50) + 2 * 50)
    attention = 100 * 100 + 100 + 100
    assert count_parameters(model) == word_gru + sentence_gru + 2 * attention + 505 == 142_105


@pytest.mark.filterwarnings("ignore:You are using a softmax over axis")
def test_batched_padded_equals_the_stock_keras_build_one_document_at_a_time():
    """The batched model, padded at both levels, against HAN written from
    stock Keras layers (``keras_posattn_reference.han``: Keras' GRU and
    plain ops, our weights copied in) run on one document at a time with
    no padding but its sentences' own."""
    texts = ["the film was good. the music was great!", "a plot never bored me.",
             "", "scenes felt long? it was not good. the music! great"]
    pre = DocumentPreprocessor.from_texts(texts)
    model = small_model(vocabulary_size=pre.vocabulary_size)
    rng = np.random.default_rng(0)
    for weight in model.weights:  # no zero biases that could hide leaking padding
        weight.assign(rng.normal(0.0, 0.3, tuple(weight.shape)).astype("float32"))
    reference = build_reference(model)
    ids = to_numpy(pre(texts))
    logits = to_numpy(model(np.pad(ids, [(0, 0), (0, 2), (0, 4)]), training=False))
    assert np.ptp(logits, axis=0).max() > 1e-3  # the documents differ
    for i, text in enumerate(texts):
        expected = to_numpy(reference(one_document(ids[i]), training=False))[0]
        np.testing.assert_allclose(logits[i], expected, atol=1e-5, err_msg=repr(text))


def test_attention_maps():
    texts = ["good film. bad music! long scenes.", "fine."]
    pre = DocumentPreprocessor.from_texts(texts)
    model = small_model(vocabulary_size=pre.vocabulary_size)
    maps = model.attention_maps(to_numpy(pre(texts)))
    assert sorted(maps) == ["sentence"]
    assert maps["sentence"].shape == (2, 3)
    np.testing.assert_allclose(maps["sentence"].sum(-1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(maps["sentence"][1, 1:], 0.0)
