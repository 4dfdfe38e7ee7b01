"""Bi-LSTM reference model: the shared model checks, its parameter count,
stock Keras layers only, and short texts."""

import keras
import numpy as np
import pytest
from layer_checks import to_numpy
from model_checks import check_mixed_precision
from model_checks import run_model_test

from keras_posattn import zoo
from keras_posattn.utils import count_parameters

VOCAB = 30


def small_model(seed=0):
    keras.utils.set_random_seed(seed)
    return zoo.build("bilstm", num_classes=3, vocabulary_size=VOCAB, embedding_dim=8, units=4)


def test_shared_model_checks():
    run_model_test("bilstm", {"embedding_dim": 16, "units": 8})


def test_parameter_count():
    """2 directions x 4 gates x (150 * (300 + 150) + 150), then 300 * 5 + 5."""
    model = zoo.build("bilstm", num_classes=5, vocabulary_size=VOCAB)
    assert count_parameters(model) == 2 * 4 * (150 * 450 + 150) + 1_505 == 542_705


def test_stock_recurrent_layers():
    model = small_model()
    recurrent = model.get_layer("bilstm")
    assert type(recurrent) is keras.layers.Bidirectional
    assert type(recurrent.forward_layer) is keras.layers.LSTM
    assert recurrent.backward_layer.go_backwards


@pytest.mark.parametrize("length", [0, 1, 2])
def test_short_texts(length):
    """The backward LSTM starts at the last real token: padding never
    changes a logit, and an empty text pools to zeros (finite logits)."""
    model = small_model()
    ids = np.full((1, length), 5, "int32")
    logits = to_numpy(model(np.pad(ids, [(0, 0), (0, 1)]), training=False))
    assert np.isfinite(logits).all()
    np.testing.assert_allclose(to_numpy(model(np.pad(ids, [(0, 0), (0, 20)]), training=False)),
                               logits, atol=1e-6)
    if length == 0:
        np.testing.assert_allclose(logits[0], to_numpy(model.head.logits.bias), atol=1e-6)


@pytest.mark.parametrize("dtype_policy", ["mixed_float16", "mixed_bfloat16"], indirect=True)
def test_mixed_precision(dtype_policy):
    check_mixed_precision(small_model())
