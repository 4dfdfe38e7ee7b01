"""MPSAN end to end: parameter counts, padding invariance, saving, training."""

import os

import keras
import numpy as np
import pytest
from layer_checks import to_numpy

from keras_posattn import zoo
from keras_posattn.models import MPSAN

NUM_CLASSES = 5
VOCAB = 40
# Small settings for everything that runs (the parameter-count tests only build).
SMALL = dict(embedding_dim=16, hidden_dim=16, head_units=16, max_length=64)


def trainable_count_without_embedding(model):
    embedding = {id(w) for w in model.embedding.weights}
    return sum(int(np.prod(w.shape)) for w in model.trainable_weights if id(w) not in embedding)


def small_model(name="mpsan", seed=0, **overrides):
    keras.utils.set_random_seed(seed)
    config = dict(SMALL)
    config.update(overrides)
    return zoo.build(name, num_classes=NUM_CLASSES, vocabulary_size=VOCAB, **config)


def sentence(length, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(2, VOCAB, size=(1, length)).astype("int32")


def pad(ids, extra):
    return np.pad(ids, [(0, 0), (0, extra)]).astype("int32")


# --- parameter counts (d = 300: build only, never run) ---

PAPER_COUNT = 1_087_509  # 4*(300*300+300) + 4*601 + (300*1500+1500) + 2*(300*300+300) + (300*300+300) + (300*5+5)


@pytest.mark.parametrize("n", [1, 2, 64])
def test_parameter_count_paper_text(n):
    model = zoo.build("mpsan", num_classes=5, vocabulary_size=VOCAB, max_length=n)
    # The paper's 1.09M, plus 1,500 bias entries per extra position for the
    # paper's position-dependent b_P in R^{5 d_h x n}.
    assert trainable_count_without_embedding(model) == PAPER_COUNT + 1500 * (n - 1)
    # The embedding is excluded, and it is what we think it is.
    assert [tuple(w.shape) for w in model.embedding.trainable_weights] == [(VOCAB, 300)]


def test_parameter_count_released_code():
    model = zoo.build("mpsan_released", num_classes=5, vocabulary_size=VOCAB)
    count = trainable_count_without_embedding(model)
    assert count == PAPER_COUNT
    assert round(count / 1e6, 2) == 1.09  # paper, Table 1: 1.09M (|θ| "1.1m")


# The paper's reported parameter counts (millions, without embeddings):
# Table 3: B&F + TPW 0.73m, B&F + FG 1.45m, mul + FG 4.33m;
# Table 4: M-D + mul + TPW 1.81m; Table 5: MPSAN w/o attention 0.09m.
# max_length=1 so the position-dependent bias adds nothing beyond the code's.
@pytest.mark.parametrize(
    "name, millions",
    [
        ("mpsan", 1.09),
        ("mpsan_table3_bf_tpw", 0.73),
        ("mpsan_table3_bf_fg", 1.45),
        ("mpsan_table3_mul_fg", 4.33),
        ("mpsan_table4_md_mul", 1.81),
        ("mpsan_table5_no_attention", 0.09),
    ],
)
def test_parameter_counts_of_paper_variants(name, millions):
    model = zoo.build(name, num_classes=5, vocabulary_size=VOCAB, max_length=1)
    assert round(trainable_count_without_embedding(model) / 1e6, 2) == millions
    shared = zoo.build(name, num_classes=5, vocabulary_size=VOCAB, fusion_bias="shared")
    assert round(trainable_count_without_embedding(shared) / 1e6, 2) == millions


# --- behaviour (small d) ---


def test_padding_invariance_of_logits():
    model = small_model()
    ids = sentence(6)
    a = to_numpy(model(pad(ids, 5), training=False))
    b = to_numpy(model(pad(ids, 50), training=False))
    c = to_numpy(model(ids, training=False))
    assert a.shape == (1, NUM_CLASSES) and a.dtype == np.float32
    np.testing.assert_allclose(a, b, atol=1e-5)
    np.testing.assert_allclose(a, c, atol=1e-5)


@pytest.mark.parametrize("name", ["mpsan_released", "mpsan_table4_md_mul", "mpsan_table3_mul_fg"])
def test_padding_invariance_of_variants(name):
    model = small_model(name)
    ids = sentence(7, seed=3)
    a = to_numpy(model(pad(ids, 5), training=False))
    b = to_numpy(model(pad(ids, 50), training=False))
    np.testing.assert_allclose(a, b, atol=1e-5)


def test_batch_rows_are_independent():
    model = small_model()
    rows = [sentence(n, seed=n)[0] for n in (2, 5, 9)]
    batch = np.zeros((3, 12), dtype="int32")
    for i, r in enumerate(rows):
        batch[i, : len(r)] = r
    together = to_numpy(model(batch, training=False))
    for i, r in enumerate(rows):
        alone = to_numpy(model(r[None].astype("int32"), training=False))
        np.testing.assert_allclose(together[i], alone[0], atol=1e-5)


def test_dropout_off_at_inference():
    model = small_model()
    ids = pad(sentence(6), 3)
    np.testing.assert_array_equal(
        to_numpy(model(ids, training=False)), to_numpy(model(ids, training=False))
    )
    np.testing.assert_array_equal(to_numpy(model(ids)), to_numpy(model(ids, training=False)))


# Keras warns that a softmax over one position is constant: that is the point.
@pytest.mark.filterwarnings("ignore:You are using a softmax over axis")
@pytest.mark.parametrize("length", [1, 2])
def test_short_sentences_give_finite_logits(length):
    model = small_model()
    ids = sentence(length, seed=length)
    for x in (ids, pad(ids, 4)):
        logits = to_numpy(model(x, training=False))
        assert np.all(np.isfinite(logits))
    np.testing.assert_allclose(
        to_numpy(model(ids, training=False)), to_numpy(model(pad(ids, 4), training=False)), atol=1e-5
    )
    # An all-padding row too.
    assert np.all(np.isfinite(to_numpy(model(np.zeros((1, 5), "int32"), training=False))))


@pytest.mark.parametrize("name", ["mpsan", "mpsan_released"])
def test_keras_round_trip(tmp_path, name):
    model = small_model(name)
    vectors = np.random.default_rng(0).normal(size=(VOCAB, 16)).astype("float32")
    pretrained = np.arange(VOCAB) % 2 == 0
    model.embedding.set_pretrained(vectors, pretrained)
    ids = np.concatenate([pad(sentence(6), 2), pad(sentence(3, seed=1), 5)])
    expected = to_numpy(model(ids, training=False))
    path = os.path.join(tmp_path, f"{name}.keras")
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    assert isinstance(loaded, MPSAN)
    assert loaded.get_config() == model.get_config()
    np.testing.assert_array_equal(to_numpy(loaded(ids, training=False)), expected)
    np.testing.assert_array_equal(
        to_numpy(loaded.embedding(np.arange(VOCAB)[None]))[0], vectors
    )


def test_short_fit_lowers_the_loss():
    model = small_model(dropout=0.1)
    rng = np.random.default_rng(0)
    x = rng.integers(2, VOCAB, size=(32, 10)).astype("int32")
    lengths = rng.integers(1, 11, size=32)
    x[np.arange(10)[None] >= lengths[:, None]] = 0
    y = rng.integers(0, NUM_CLASSES, size=32)
    model.compile(
        optimizer=keras.optimizers.Adam(1e-2),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    before = model.evaluate(x, y, verbose=0)
    model.fit(x, y, batch_size=16, epochs=4, verbose=0)
    after = model.evaluate(x, y, verbose=0)
    assert np.isfinite(after) and after < before
    for w in model.weights:
        assert np.all(np.isfinite(to_numpy(w))), w.path


@pytest.mark.parametrize("compatibility", ["additive", "multi_dimensional"])
def test_attention_maps(compatibility):
    model = small_model(compatibility=compatibility)
    lengths = [6, 3]
    ids = np.zeros((2, 8), dtype="int32")
    for i, n in enumerate(lengths):
        ids[i, :n] = sentence(n, seed=i)[0]
    maps = model.attention_maps(ids)
    assert model.branch_names == ["fa2", "fa3", "bw_sd", "fw_sd"]
    assert sorted(maps) == sorted(model.branch_names + ["pooling"])
    for name in model.branch_names:
        weights = maps[name]
        assert weights.shape == (2, 8, 8)
        sums = weights.sum(axis=-1)
        assert np.all(np.isclose(sums, 1.0, atol=1e-5) | (sums == 0.0)), name
        for i, n in enumerate(lengths):
            assert np.all(sums[i, n:] == 0)  # padding queries
            assert np.all(weights[i, :, n:] == 0)  # padding keys
    for i, n in enumerate(lengths):
        # Under Backward + SD the 1st token sees nothing; under Forward + SD
        # the last real token sees nothing; every other real row sums to 1.
        bw, fw = maps["bw_sd"][i].sum(-1), maps["fw_sd"][i].sum(-1)
        assert bw[0] == 0 and np.allclose(bw[1:n], 1.0, atol=1e-5)
        assert fw[n - 1] == 0 and np.allclose(fw[: n - 1], 1.0, atol=1e-5)
        # Backward weights lie strictly below the diagonal.
        assert np.all(np.triu(maps["bw_sd"][i]) == 0)
        assert np.all(np.tril(maps["fw_sd"][i]) == 0)
    pooling = maps["pooling"]
    assert pooling.shape == (2, 8)
    np.testing.assert_allclose(pooling.sum(-1), 1.0, atol=1e-5)
    for i, n in enumerate(lengths):
        assert np.all(pooling[i, n:] == 0)


@pytest.mark.parametrize(
    "dtype_policy", ["mixed_float16", "mixed_bfloat16"], indirect=True
)
def test_mixed_precision(dtype_policy):
    model = small_model()
    ids = np.stack([pad(sentence(6), 2)[0], pad(sentence(1), 7)[0], np.zeros(8, "int32")])
    logits = model(ids, training=False)
    assert logits.dtype == "float32"
    assert np.all(np.isfinite(to_numpy(logits)))
    model.compile(
        optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    loss = model.train_on_batch(ids, np.array([0, 1, 2]))
    assert np.isfinite(loss)
    assert np.all(np.isfinite(to_numpy(model(ids, training=False))))
