"""Kim's CNN (static and non-static presets): the shared model checks,
SPE-CNN Table 2's parameter counts, a NumPy reference, windows wider than
the text, and the max-norm constraint on the softmax weights."""

import keras
import numpy as np
import pytest
from layer_checks import to_numpy
from model_checks import check_mixed_precision
from model_checks import run_model_test
from numpy_reference import check_against_reference

from keras_posattn import zoo
from keras_posattn.utils import count_parameters

VOCAB = 30


def small_model(name="kim_cnn_static", seed=0, **overrides):
    keras.utils.set_random_seed(seed)
    config = dict(num_classes=3, vocabulary_size=VOCAB, embedding_dim=8, filters=4)
    config.update(overrides)
    return zoo.build(name, **config)


def test_shared_model_checks():
    run_model_test("kim_cnn_static", {"embedding_dim": 16, "filters": 8})


# SPE-CNN Table 2, CNN-static: 361K (2 classes), 362K (6), 363K (10), 366K (20).
@pytest.mark.parametrize("classes, count, reported", [
    (2, 360_902, 361), (6, 362_106, 362), (10, 363_310, 363), (20, 366_320, 366),
])
def test_parameter_count_matches_spe_cnn_table2(classes, count, reported):
    model = zoo.build("kim_cnn_static", num_classes=classes, vocabulary_size=VOCAB)
    assert count_parameters(model) == count == 100 * 12 * 300 + 300 + 301 * classes
    assert round(count / 1000) == reported


def test_static_and_nonstatic_presets():
    static = zoo.build("kim_cnn_static", vocabulary_size=VOCAB)
    nonstatic = zoo.build("kim_cnn_nonstatic", vocabulary_size=VOCAB)
    assert static.embedding.trainable_weights == []
    assert [tuple(w.shape) for w in nonstatic.embedding.trainable_weights] == [(VOCAB, 300)]
    for model in (static, nonstatic):
        assert model.kernel_sizes == [3, 4, 5] and model.filters == 100
        assert model.dropout == 0.5 and model.head.logits_max_norm == 3.0
    assert zoo.get_preset("kim_cnn_nonstatic")["recipe"]["optimizer"] == "adadelta"


def numpy_kim_cnn(model, ids):
    table = to_numpy(model.embedding.embeddings).astype("float64")
    out = []
    for row in ids:
        n = int((row != 0).sum())
        x = table[row[:n]]
        pooled = []
        for k in model.kernel_sizes:
            conv = model.get_layer(f"conv{k}")
            kernel, bias = to_numpy(conv.kernel).astype("float64"), to_numpy(conv.bias)
            left = (k - 1) // 2  # "same" padding: windows centred on each token
            padded = np.pad(x, [(left, k - 1 - left), (0, 0)])
            c = np.stack([np.einsum("kd,kdf->f", padded[t:t + k], kernel) + bias for t in range(n)])
            pooled.append(np.maximum(c, 0.0).max(0) if n else np.zeros(len(bias)))
        z = np.concatenate(pooled)
        out.append(z @ to_numpy(model.head.logits.kernel) + to_numpy(model.head.logits.bias))
    return np.stack(out)


def test_forward_pass_matches_numpy_reference():
    check_against_reference(small_model(), numpy_kim_cnn, (10, 6, 2, 1), VOCAB, seed=5)


@pytest.mark.parametrize("length", [0, 1, 2, 4])
def test_windows_wider_than_the_text(length):
    """Windows of 3, 4, 5 over texts of 0 to 4 tokens: finite logits, and
    padding changes nothing."""
    model = small_model()
    ids = np.zeros((1, length), "int32") + 7
    logits = to_numpy(model(np.pad(ids, [(0, 0), (0, 1)]), training=False))
    assert np.isfinite(logits).all()
    np.testing.assert_allclose(to_numpy(model(np.pad(ids, [(0, 0), (0, 30)]), training=False)),
                               logits, atol=1e-6)


@pytest.mark.parametrize("max_norm", [3.0, 0])
def test_max_norm_on_the_softmax_weights(max_norm):
    """Kim's constraint: after a step each class's weight vector has norm <= 3."""
    model = small_model(logits_max_norm=max_norm, dropout=0.0)
    kernel = model.head.logits.kernel
    kernel.assign(np.full(tuple(kernel.shape), 2.0, "float32"))  # column norms 2 * sqrt(12)
    model.compile(optimizer=keras.optimizers.SGD(0.1),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.train_on_batch(np.array([[3, 4, 5, 0]], "int32"), np.array([1]))
    norms = np.linalg.norm(to_numpy(kernel), axis=0)
    assert norms.shape == (3,)
    if max_norm:
        np.testing.assert_allclose(norms, 3.0, rtol=1e-4)
    else:
        assert np.all(norms > 6.0)


@pytest.mark.parametrize("dtype_policy", ["mixed_float16", "mixed_bfloat16"], indirect=True)
def test_mixed_precision(dtype_policy):
    check_mixed_precision(small_model())
