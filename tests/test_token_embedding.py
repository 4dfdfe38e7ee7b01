"""TokenEmbedding: trainable-row modes, frozen pretrained rows, masking, saving."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf
from layer_checks import run_layer_test
from layer_checks import to_numpy

from keras_posattn import zoo
from keras_posattn.layers import TokenEmbedding

DATA = os.path.join(os.path.dirname(__file__), "data")

V, D = 10, 4
# Rows 2, 3, 5, 8 came from pretrained vectors; 4, 6, 7, 9 are OOV words.
PRETRAINED = np.array([0, 0, 1, 1, 0, 1, 0, 0, 1, 0], dtype=bool)
OOV_ROWS = [4, 6, 7, 9]
FROZEN_ROWS = [0, 1, 2, 3, 5, 8]  # PAD, UNK and the pretrained rows


def matrix(seed=0):
    m = np.random.default_rng(seed).normal(size=(V, D)).astype("float32")
    m[0] = 0.0  # PAD
    m[1] = 0.0  # UNK
    return m


def ids_batch():
    # Every row appears, as well as padding.
    return np.array([[2, 3, 4, 5, 6, 0], [7, 8, 9, 1, 0, 0]], dtype="int32")


def table(layer):
    """The effective vectors, one row per id."""
    return to_numpy(layer(np.arange(V, dtype="int32")[None]))[0]


def train_steps(layer, optimizer, steps=2, seed=0):
    """A few steps on a random-projection loss over every row."""
    ids = np.arange(V, dtype="int32")[None]
    r = np.random.default_rng(seed).normal(size=(1, V, D)).astype("float32")
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = keras.ops.sum(layer(ids) * r) + sum(layer.losses)
        grads = tape.gradient(loss, layer.trainable_weights)
        for g, w in zip(grads, layer.trainable_weights):
            assert g is not None and np.all(np.isfinite(to_numpy(g))), w.path
        optimizer.apply_gradients(zip(grads, layer.trainable_weights))


@pytest.mark.parametrize(
    "mode, trainable, non_trainable", [("all", 1, 0), ("oov", 1, 1), ("none", 0, 1)]
)
def test_standard_layer_checks(mode, trainable, non_trainable):
    run_layer_test(
        lambda: TokenEmbedding(V, D, trainable_rows=mode),
        ids_batch(),
        expected_output_shape=(2, 6, D),
        expected_num_trainable_weights=trainable,
        expected_num_non_trainable_weights=non_trainable,
    )


def test_standard_layer_checks_with_regularizer_no_mask():
    run_layer_test(
        lambda: TokenEmbedding(
            V, D, embeddings_regularizer="l2", mask_zero=False, embeddings_initializer="ones"
        ),
        ids_batch(),
        expected_output_shape=(2, 6, D),
    )


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize("regularizer", [None, "l2"])
def test_oov_mode_trains_only_oov_rows(optimizer, regularizer):
    layer = TokenEmbedding(V, D, trainable_rows="oov", embeddings_regularizer=regularizer)
    layer.set_pretrained(matrix(), PRETRAINED)
    before = table(layer)
    np.testing.assert_array_equal(before, matrix())
    train_steps(layer, keras.optimizers.get({"class_name": optimizer, "config": {"learning_rate": 0.1}}))
    after = table(layer)
    # Pretrained rows, PAD (0) and UNK (1) unchanged; OOV rows trained.
    np.testing.assert_array_equal(after[FROZEN_ROWS], before[FROZEN_ROWS])
    for row in OOV_ROWS:
        assert not np.allclose(after[row], before[row]), row
    np.testing.assert_array_equal(after[:2], 0.0)


def test_oov_mode_freezes_pad_and_unk_even_if_not_marked():
    layer = TokenEmbedding(V, D, trainable_rows="oov")
    m = matrix()
    m[1] = 0.5  # an UNK vector given explicitly
    layer.set_pretrained(m, np.zeros(V, dtype=bool))  # nothing marked pretrained
    before = table(layer)
    train_steps(layer, keras.optimizers.SGD(0.1))
    after = table(layer)
    np.testing.assert_array_equal(after[:2], before[:2])
    assert not np.allclose(after[2:], before[2:])


def test_all_mode_trains_every_row_and_none_mode_nothing():
    layer = TokenEmbedding(V, D, trainable_rows="all")
    layer.set_pretrained(matrix() + 1.0, PRETRAINED)
    before = table(layer)
    train_steps(layer, keras.optimizers.SGD(0.1))
    after = table(layer)
    for row in range(V):
        assert not np.allclose(after[row], before[row]), row

    layer = TokenEmbedding(V, D, trainable_rows="none")
    layer.set_pretrained(matrix())
    assert layer.trainable_weights == []
    np.testing.assert_array_equal(table(layer), matrix())


def test_mask_from_id_zero():
    ids = ids_batch()
    layer = TokenEmbedding(V, D)
    np.testing.assert_array_equal(to_numpy(layer.compute_mask(ids)), ids != 0)
    assert TokenEmbedding(V, D, mask_zero=False).compute_mask(ids) is None
    # In a functional model the mask reaches the next layer.
    inputs = keras.Input(shape=(None,), dtype="int32")
    x = TokenEmbedding(V, D)(inputs)
    assert x._keras_mask is not None


@pytest.mark.parametrize("mode", ["oov", "all", "none"])
def test_keras_round_trip_keeps_loaded_vectors(tmp_path, mode):
    inputs = keras.Input(shape=(None,), dtype="int32")
    layer = TokenEmbedding(V, D, trainable_rows=mode, name="emb")
    model = keras.Model(inputs, layer(inputs))
    m = matrix(seed=4)
    layer.set_pretrained(m, PRETRAINED)
    path = os.path.join(tmp_path, "emb.keras")
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    loaded_layer = loaded.get_layer("emb")
    np.testing.assert_array_equal(table(loaded_layer), m)
    if mode == "oov":
        # The frozen rows are still frozen after reloading.
        train_steps(loaded_layer, keras.optimizers.SGD(0.1))
        after = table(loaded_layer)
        np.testing.assert_array_equal(after[FROZEN_ROWS], m[FROZEN_ROWS])
        assert not np.allclose(after[OOV_ROWS], m[OOV_ROWS])


def test_errors():
    with pytest.raises(ValueError, match="trainable_rows"):
        TokenEmbedding(V, D, trainable_rows="pretrained")
    with pytest.raises(ValueError, match="shape"):
        TokenEmbedding(V, D).set_pretrained(np.zeros((V + 1, D)))


def test_default_initializer_is_paper_uniform():
    layer = TokenEmbedding(200, 16)
    layer.build()
    values = to_numpy(layer.embeddings)
    assert values.min() >= -0.05 and values.max() <= 0.05
    assert values.std() > 0.01


@pytest.mark.parametrize(
    "dtype_policy", ["mixed_float16", "mixed_bfloat16"], indirect=True
)
@pytest.mark.parametrize("mode", ["oov", "all"])
def test_mixed_precision(dtype_policy, mode):
    layer = TokenEmbedding(V, D, trainable_rows=mode)
    layer.set_pretrained(matrix(), PRETRAINED)
    out = layer(ids_batch())
    assert out.dtype == keras.mixed_precision.global_policy().compute_dtype
    assert layer.embeddings.dtype == "float32"
    np.testing.assert_allclose(
        to_numpy(out).astype("float32"), matrix()[ids_batch()], atol=2e-2, rtol=1e-2
    )


def test_one_table_unless_frozen_rows_hold_vectors(tmp_path):
    """Without pretrained vectors an "oov" embedding keeps one table (and the
    row gate); the frozen table appears when frozen rows hold vectors, and
    the saved file keeps whichever the model has."""
    model = zoo.build("mpsan")  # the preset's trainable_embeddings="oov"
    layer = model.embedding
    assert layer.trainable_rows == "oov"
    assert [w.path for w in layer.weights] == ["token_embedding/embeddings",
                                               "token_embedding/row_is_trainable"]
    vocabulary, dim = layer.vocabulary_size, layer.output_dim
    assert sum(int(np.prod(w.shape)) for w in model.non_trainable_weights) == vocabulary
    path = os.path.join(tmp_path, "random.keras")
    model.save(path)
    assert len(keras.saving.load_model(path).embedding.weights) == 2

    pretrained = np.zeros(vocabulary, bool)
    pretrained[2:100] = True
    m = np.random.default_rng(0).normal(size=(vocabulary, dim)).astype("float32")
    m[:2] = 0
    layer.set_pretrained(m, pretrained)
    assert len(layer.weights) == 3
    assert layer.weights[2].path == "token_embedding/frozen_rows/embeddings"
    path = os.path.join(tmp_path, "pretrained.keras")
    model.save(path)
    loaded = keras.saving.load_model(path).embedding
    assert len(loaded.weights) == 3
    np.testing.assert_array_equal(to_numpy(loaded.table()), m)


@pytest.mark.parametrize("kind", ["pretrained", "random"])
def test_weights_of_the_two_table_layout_still_load(kind):
    """Weights written when an "oov" embedding always held a second full
    table (tests/data/token_embedding_v0.py wrote them with that code) load
    with the same outputs; those whose frozen rows were all zero load into
    one table."""
    inputs = keras.Input((None,), dtype="int32")
    model = keras.Model(inputs, TokenEmbedding(V, D, trainable_rows="oov",
                                               name="token_embedding")(inputs))
    model.load_weights(os.path.join(DATA, f"token_embedding_v0_{kind}.weights.h5"))
    expected = np.load(os.path.join(DATA, f"token_embedding_v0_{kind}.npy"))
    np.testing.assert_array_equal(model.predict(np.arange(V)[None], verbose=0), expected)
    assert len(model.get_layer("token_embedding").weights) == (3 if kind == "pretrained" else 2)


def test_loading_a_file_without_a_frozen_table_clears_the_models(tmp_path):
    inputs = keras.Input(shape=(None,), dtype="int32")
    plain = keras.Model(inputs, TokenEmbedding(V, D, trainable_rows="oov", name="emb")(inputs))
    path = os.path.join(tmp_path, "plain.weights.h5")
    plain.save_weights(path)
    inputs = keras.Input(shape=(None,), dtype="int32")
    layer = TokenEmbedding(V, D, trainable_rows="oov", name="emb")
    other = keras.Model(inputs, layer(inputs))
    layer.set_pretrained(matrix(), PRETRAINED)
    other.load_weights(path)
    np.testing.assert_array_equal(table(layer), table(plain.get_layer("emb")))


@pytest.mark.parametrize("dtype_policy", ["mixed_bfloat16"], indirect=True)
def test_float32_copy_after_mixed_precision_keeps_frozen_rows_and_optimizer(dtype_policy):
    """The trainer's float32 copy (for classifier.keras and the export after
    mixed-precision training) of a model with frozen pretrained rows: same
    weights, same outputs, and the optimizer that trained it, not the
    RMSprop of a bare ``compile()``."""
    from keras_posattn.training.trainer import float32_copy

    model = zoo.build("bilstm", num_classes=2, vocabulary_size=V, embedding_dim=D,
                      units=3, trainable_embeddings="oov")
    model.embedding.set_pretrained(matrix(), PRETRAINED)
    model.compile(optimizer=keras.optimizers.Adam(2e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(ids_batch(), np.array([0, 1]), verbose=0)
    copy = float32_copy(model)
    assert copy.compute_dtype == "float32"
    assert len(copy.embedding.weights) == 3
    np.testing.assert_array_equal(to_numpy(copy.embedding.table()),
                                  to_numpy(model.embedding.table()))
    assert type(copy.optimizer) is keras.optimizers.Adam
    assert to_numpy(copy.optimizer.learning_rate) == pytest.approx(2e-3)
