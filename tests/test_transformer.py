"""Transformer reference model: the shared model checks (an empty string
through the export included), its parameter count, and Keras's handling of
padded query rows (no NaN with or without attention dropout)."""

import keras
import numpy as np
import pytest
from layer_checks import to_numpy
from model_checks import check_mixed_precision
from model_checks import run_model_test

from keras_posattn import zoo
from keras_posattn.models import Transformer
from keras_posattn.utils import count_parameters

VOCAB = 30


def small_model(seed=0, **overrides):
    keras.utils.set_random_seed(seed)
    config = dict(num_classes=3, vocabulary_size=VOCAB, embedding_dim=8, num_heads=2, ff_dim=16,
                  max_length=40)
    config.update(overrides)
    return zoo.build("transformer", **config)


def test_shared_model_checks():
    run_model_test("transformer", {"embedding_dim": 16, "num_heads": 2, "ff_dim": 32,
                                   "num_layers": 1})


def test_parameter_count():
    """Per block 4 * (300*300 + 300) + (300*600 + 600 + 600*300 + 300) + 2 * 600;
    positions 64 * 300; logits 300 * 5 + 5."""
    model = zoo.build("transformer", num_classes=5, vocabulary_size=VOCAB)
    assert model.max_length == 64
    block = 4 * 90_300 + 360_900 + 1_200
    assert count_parameters(model) == 2 * block + 64 * 300 + 1_505 == 1_467_305
    attention = model.get_layer("block0_attention")
    assert type(attention) is keras.layers.MultiHeadAttention
    assert (attention.num_heads, attention.key_dim) == (6, 50)


@pytest.mark.parametrize("attention_dropout", [0.0, 0.3])
def test_padded_query_rows_give_no_nan(attention_dropout):
    """A padded query allows no key: Keras's fused path (no attention
    dropout) averages uniformly, its Softmax layer (with dropout) gives
    zeros. Neither may produce NaN, in training or inference, and the
    logits of real tokens never depend on the padding."""
    model = small_model(attention_dropout=attention_dropout)
    ids = np.array([[4, 5, 6, 0, 0], [7, 0, 0, 0, 0], [0, 0, 0, 0, 0]], "int32")
    for training in (False, True):
        assert np.isfinite(to_numpy(model(ids, training=training))).all()
    logits = to_numpy(model(ids, training=False))
    longer = to_numpy(model(np.pad(ids, [(0, 0), (0, 20)]), training=False))
    np.testing.assert_allclose(longer, logits, atol=1e-5)
    np.testing.assert_allclose(logits[2], to_numpy(model.head.logits.bias), atol=1e-6)


def test_stock_masked_average_is_nan_on_an_empty_text():
    """Why the pool is guarded: stock GlobalAveragePooling1D divides 0 by 0."""
    x = np.ones((1, 4, 3), "float32")
    stock = to_numpy(keras.layers.GlobalAveragePooling1D()(x, mask=np.zeros((1, 4), bool)))
    assert np.isnan(stock).all()


def test_positions_make_word_order_matter():
    model = small_model()
    out = to_numpy(model(np.array([[5, 9, 11], [11, 9, 5]], "int32"), training=False))
    assert np.abs(out[0] - out[1]).max() > 1e-4


def test_max_length_is_required():
    with pytest.raises(ValueError, match="learned positions need max_length"):
        Transformer(vocabulary_size=VOCAB, max_length=None)


@pytest.mark.parametrize("dtype_policy", ["mixed_float16", "mixed_bfloat16"], indirect=True)
def test_mixed_precision(dtype_policy):
    check_mixed_precision(small_model())
