"""FoldSentences / UnfoldSentences: the reshapes between documents and
their sentences in hierarchical models."""

import doctest

import keras
import numpy as np
import pytest
from layer_checks import to_numpy

from keras_posattn.layers import FoldSentences
from keras_posattn.layers import UnfoldSentences
from keras_posattn.layers import fold_sentences
from keras_posattn.layers import unfold_sentences


def test_fold_is_a_reshape_and_unfold_inverts_it():
    x = np.arange(2 * 3 * 4 * 5, dtype="float32").reshape(2, 3, 4, 5)
    folded = to_numpy(FoldSentences()(x))
    np.testing.assert_array_equal(folded, x.reshape(6, 4, 5))
    ids = np.ones((2, 3, 4), "int32")
    np.testing.assert_array_equal(to_numpy(UnfoldSentences()(folded, ids)), x)
    # per-sentence vectors go back to their documents
    vectors = folded[:, 0]  # (6, 5)
    np.testing.assert_array_equal(to_numpy(UnfoldSentences()(vectors, ids)), x[:, :, 0])
    # masks fold too (bool and int)
    mask = ids.astype(bool)
    assert to_numpy(FoldSentences()(mask)).shape == (6, 4)


def test_symbolic_shapes_and_keras_round_trip(tmp_path):
    ids = keras.Input(shape=(None, None), dtype="int32")
    h = keras.layers.Embedding(10, 3)(ids)
    folded = FoldSentences()(h)
    assert folded.shape == (None, None, 3)
    sentence = keras.layers.GlobalAveragePooling1D()(folded)
    doc = UnfoldSentences()(sentence, ids)
    assert doc.shape == (None, None, 3)
    model = keras.Model(ids, doc)
    data = np.random.default_rng(0).integers(0, 10, (2, 5, 7))
    expected = to_numpy(model(data))
    assert expected.shape == (2, 5, 3)
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras", safe_mode=True)
    np.testing.assert_allclose(to_numpy(loaded(data)), expected, atol=1e-6)
    # other document shapes run through the same model
    assert to_numpy(model(data[:1, :2, :3])).shape == (1, 2, 3)


def test_config_and_errors():
    assert set(FoldSentences().get_config()) >= {"name", "trainable", "dtype"}
    layer = FoldSentences.from_config(FoldSentences(name="f").get_config())
    assert layer.name == "f"
    with pytest.raises(ValueError, match="sentences, words"):
        FoldSentences().compute_output_shape((2, 3))
    assert doctest.testmod(fold_sentences).failed == 0
    assert doctest.testmod(unfold_sentences).failed == 0
