"""SPE-CNN: the shared model checks, the paper's parameter counts, a NumPy
reference of the forward pass, and what the positional encoding changes."""

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


def small_model(name="spe_cnn", seed=0, **overrides):
    keras.utils.set_random_seed(seed)
    config = dict(num_classes=3, vocabulary_size=VOCAB, embedding_dim=8, filters=6)
    config.update(overrides)
    return zoo.build(name, **config)


def test_shared_model_checks():
    run_model_test("spe_cnn", {"embedding_dim": 16, "filters": 8})


# Table 2: 116K (2 classes), 117K (6), 118K (10), 121K (20), 300d frozen
# vectors: 3*300*128 + 128 (conv) + 2*128 (layer norm) + 257 c (classifier).
@pytest.mark.parametrize("classes, count, reported", [
    (2, 116_098, 116), (6, 117_126, 117), (10, 118_154, 118), (20, 120_724, 121),
])
def test_parameter_count_matches_table2(classes, count, reported):
    model = zoo.build("spe_cnn", num_classes=classes, vocabulary_size=VOCAB)
    assert count_parameters(model) == count == 115_584 + 257 * classes
    assert round(count / 1000) == reported
    # The frozen embedding is no trainable weight at all.
    assert model.embedding.trainable_weights == []
    assert count_parameters(model, exclude_embedding=False) == count


def test_presets():
    paper = zoo.get_preset("spe_cnn")
    assert paper["config"]["position_encoding"] == "interleaved"
    assert paper["reported"]["trec"] == 92.52
    recipe = paper["recipe"]
    assert (recipe["optimizer"], recipe["learning_rate"], recipe["batch_size"]) == ("adam", 1e-4, 40)
    other = zoo.get_preset("spe_cnn_concatenated")
    assert other["config"] == {**paper["config"], "position_encoding": "concatenated"}
    assert "reported" not in other
    assert zoo.build("spe_cnn_concatenated", vocabulary_size=VOCAB).get_layer(
        "position_encoding").layout == "concatenated"
    static = zoo.build("spe_cnn_table3_singlecnn_static", vocabulary_size=VOCAB)
    assert "position_encoding" not in [layer.name for layer in static.layers]


# --- a whole-model NumPy reference of the paper's equations ---


def numpy_pe(n, d, layout):
    """Eqs. 1-2 (interleaved), or all sines then all cosines (concatenated)."""
    pos = np.arange(n)[:, None]
    i = np.arange((d + 1) // 2)[None, :]
    angles = pos / 10000.0 ** (2 * i / d)
    pe = np.zeros((n, d))
    if layout == "interleaved":
        pe[:, 0::2] = np.sin(angles)
        pe[:, 1::2] = np.cos(angles[:, : d // 2])
    else:
        pe[:, : (d + 1) // 2] = np.sin(angles)
        pe[:, (d + 1) // 2:] = np.cos(angles[:, : d // 2])
    return pe


def numpy_spe_cnn(model, ids):
    get = lambda layer, attr: to_numpy(getattr(model.get_layer(layer), attr)).astype("float64")  # noqa: E731
    table = to_numpy(model.embedding.embeddings).astype("float64")
    kernel, bias = get("conv", "kernel"), get("conv", "bias")  # (3, d, f)
    gamma, beta = get("feature_norm", "gamma"), get("feature_norm", "beta")
    out = []
    for row in ids:
        n = int((row != 0).sum())  # right-padded
        x = table[row[:n]] + numpy_pe(n, table.shape[1], model.position_encoding)
        padded = np.pad(x, [(1, 1), (0, 0)])  # the "same" windows at the ends
        c = np.stack([np.einsum("kd,kdf->f", padded[t:t + 3], kernel) + bias for t in range(n)])
        mu, var = c.mean(-1, keepdims=True), c.var(-1, keepdims=True)
        c = (c - mu) / np.sqrt(var + 1e-6) * gamma + beta
        z = np.concatenate([c.max(0), c.mean(0)])
        out.append(z @ to_numpy(model.head.logits.kernel) + to_numpy(model.head.logits.bias))
    return np.stack(out)


@pytest.mark.parametrize("layout", ["interleaved", "concatenated"])
def test_forward_pass_matches_numpy_reference(layout):
    model = small_model(position_encoding=layout, embedding_dim=7)
    check_against_reference(model, numpy_spe_cnn, (9, 4, 1), VOCAB, seed=3)


def test_positions_make_word_order_matter():
    """With a window of 1 a bag of words is all the CNN sees; the encoding
    makes "a b" and "b a" differ (the paper's "The wolves ate" example)."""
    ids = np.array([[5, 9], [9, 5]], "int32")
    plain = small_model(position_encoding="none", kernel_size=1)
    out = to_numpy(plain(ids, training=False))
    np.testing.assert_allclose(out[0], out[1], atol=1e-6)
    encoded = small_model(kernel_size=1)
    out = to_numpy(encoded(ids, training=False))
    assert np.abs(out[0] - out[1]).max() > 1e-3


def test_l2_on_the_conv_and_classifier_kernels():
    model = small_model(l2=1e-4)
    model(np.array([[2, 3]], "int32"))
    kernels = [model.get_layer("conv").kernel, model.head.logits.kernel]
    expected = sum(1e-4 * float(np.sum(to_numpy(k).astype("float64") ** 2)) for k in kernels)
    np.testing.assert_allclose(float(sum(to_numpy(x) for x in model.losses)), expected, rtol=1e-5)


@pytest.mark.parametrize("dtype_policy", ["mixed_float16", "mixed_bfloat16"], indirect=True)
def test_mixed_precision(dtype_policy):
    check_mixed_precision(small_model())
