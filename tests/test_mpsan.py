"""MPSAN end to end: the shared model checks, a whole-model NumPy reference of
the paper's forward pass, parameter counts, the released code's conventions."""

import re

import keras
import numpy as np
import pytest
import tensorflow as tf
from layer_checks import to_numpy
from model_checks import run_model_test
from numpy_reference import elu as _elu
from numpy_reference import masked_softmax as _softmax

from keras_posattn import zoo

NUM_CLASSES = 5
VOCAB = 40
# Small settings for everything that runs (the parameter-count tests only build).
SMALL = dict(embedding_dim=16, max_length=64)


def trainable_count_without_embedding(model):
    from keras_posattn.utils import count_parameters

    return count_parameters(model)


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
    assert count == PAPER_COUNT - 5  # the released logits layer has no bias
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


# The released variant is the same model code in another configuration: its
# export (the slowest check, the same path) is left to the paper model's.
@pytest.mark.parametrize("name", ["mpsan", "mpsan_released"])
def test_shared_model_checks(name):
    run_model_test(name, {"embedding_dim": 16, "dropout": 0.2}, check_export=name == "mpsan")


@pytest.mark.parametrize("name", ["mpsan_table4_md_mul", "mpsan_table3_mul_fg",
                                  "mpsan_table5_no_attention"])
def test_padding_invariance_of_variants(name):
    model = small_model(name)
    ids = sentence(7, seed=3)
    a = to_numpy(model(pad(ids, 5), training=False))
    b = to_numpy(model(pad(ids, 50), training=False))
    np.testing.assert_allclose(a, b, atol=1e-5)


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
    loss = model.train_on_batch(ids, np.array([0, 1, 2]), return_dict=True)["loss"]
    assert np.isfinite(loss)
    assert np.all(np.isfinite(to_numpy(model(ids, training=False))))


# --- a whole-model NumPy reference of the forward pass ---


ACTIVATIONS = {"elu": _elu, "relu": lambda x: np.maximum(x, 0.0)}


def _numpy_mask(spec, n, rule):
    """allowed, penalty (n, n) [query, key] from the paper's formulas 8-12."""
    q, k = np.arange(n)[:, None], np.arange(n)[None, :]
    dist = np.abs(q - k)
    allowed, penalty = np.ones((n, n), bool), np.zeros((n, n))
    for part in spec.split("+"):
        if part.startswith("fa"):
            m = int(part[2:])
            allowed &= (dist <= m) if rule == "paper" else (dist < m)
            allowed &= dist > 0
        elif part == "bw":
            allowed &= k < q
        elif part == "fw":
            allowed &= k > q
        elif part == "sd":
            penalty -= np.log(np.maximum(dist, 1))
        elif part == "d":
            penalty -= dist
    return allowed, penalty


def numpy_mpsan(model, ids):
    """MPSAN's logits from its weights, position by position, in float64."""
    cfg = model.get_config()
    get = lambda layer, attr: to_numpy(getattr(model.get_layer(layer), attr)).astype("float64")  # noqa: E731
    act = ACTIVATIONS[cfg["branch_activation"]]
    c = cfg["scale"]
    compat = {"elu": lambda x: _elu(x / c), "scaled_tanh": lambda x: c * np.tanh(x / c)}[
        cfg["compatibility_activation"]]
    table = to_numpy(model.embedding.embeddings).astype("float64")
    out = []
    for row in ids:
        n = len(row)
        real = row != 0
        w = table[row]  # (n, d)
        sources = []
        for spec in cfg["branch_masks"]:
            name = spec.replace("+", "_")
            h = act(w @ get(f"{name}_projection", "kernel") + get(f"{name}_projection", "bias"))
            key = h @ get(f"{name}_attention", "key_kernel")[:, 0]  # U.h_k
            query = h @ get(f"{name}_attention", "query_kernel")[:, 0]  # V.h_q
            bias = get(f"{name}_attention", "bias")
            allowed, penalty = _numpy_mask(spec, n, cfg["faraway_rule"])
            allowed &= real[None, :] & real[:, None]
            logits = compat(key[None, :] + query[:, None] + bias) + penalty
            p = _softmax(logits, allowed, axis=1)
            sources.append(p @ h)
        sources.append(w)  # the fifth source is the embedding w itself
        stacked = np.stack(sources, axis=1)  # (n, 5, d)
        d = w.shape[1]
        fusion = w @ get("position_fusion", "kernel")
        b_p = get("position_fusion", "bias_weight")
        fusion = fusion + (b_p[:n] if b_p.ndim == 2 else b_p)
        a = fusion.reshape(n, len(sources), d)
        a = np.exp(a - a.max(axis=1, keepdims=True))
        a = a / a.sum(axis=1, keepdims=True)  # softmax over the sources, per feature
        x = (a * stacked).sum(axis=1) * real[:, None]
        pool_act = ACTIVATIONS[cfg["pooling_activation"]]
        hidden = pool_act(x @ get("pooling", "kernel_1") + get("pooling", "bias_1"))
        scores = hidden @ get("pooling", "kernel_2") + get("pooling", "bias_2")
        p = _softmax(scores, np.broadcast_to(real[:, None], scores.shape), axis=0)
        pooled = (p * x).sum(axis=0)
        head = model.head
        z = ACTIVATIONS[cfg["head_activation"]](
            pooled @ to_numpy(head.hidden.kernel) + to_numpy(head.hidden.bias))
        logits = z @ to_numpy(head.logits.kernel)
        if cfg["logits_bias"]:
            logits = logits + to_numpy(head.logits.bias)
        out.append(logits)
    return np.stack(out)


@pytest.mark.parametrize("name", ["mpsan", "mpsan_released"])
def test_forward_pass_matches_numpy_reference(name):
    """The whole model against the paper's equations: replacing the fused
    source w with a branch's h (or any other wiring change) fails here."""
    model = small_model(name, trainable_embeddings="all", max_length=12)
    rng = np.random.default_rng(7)
    for weight in model.trainable_weights:
        weight.assign(rng.normal(0.0, 0.4, size=tuple(weight.shape)).astype("float32"))
    ids = np.zeros((3, 9), "int32")
    for i, n in enumerate((9, 5, 1)):
        ids[i, :n] = rng.integers(2, VOCAB, size=n)
    expected = numpy_mpsan(model, ids)
    np.testing.assert_allclose(to_numpy(model(ids, training=False)), expected, atol=2e-4, rtol=1e-4)


def test_l2_follows_the_tf1_convention():
    """wd * tf.nn.l2_loss(w) = wd * sum(w^2) / 2 on every kernel, no bias, no embedding."""
    model = small_model("mpsan_released")
    wd = model.l2
    assert wd == 1e-6
    kernels = [w for w in model.trainable_weights
               if re.search(r"kernel(_\d)?$", w.path) and "token_embedding" not in w.path]
    assert len(kernels) == 4 * 3 + 1 + 2 + 2  # projections, U, V; W_P; pooling; head
    expected = sum(wd * float(np.sum(to_numpy(w).astype("float64") ** 2)) / 2 for w in kernels)
    model(np.array([[2, 3, 4]], "int32"))
    total = float(sum(float(to_numpy(loss)) for loss in model.losses))
    np.testing.assert_allclose(total, expected, rtol=1e-5)


def test_released_dropout_placement():
    """The released code drops the inputs of linear maps and the h feeding the
    compatibility; never the fused source w nor the pooled values."""
    model = small_model("mpsan_released", dropout=0.3)
    assert model.dropout_placement == "released"
    assert model.get_layer("embedding_dropout").rate == 0.0
    assert model.get_layer("fused_dropout").rate == 0.0
    for name in model.branch_names:
        assert model.get_layer(f"{name}_input_dropout").rate == 0.3
        assert model.get_layer(f"{name}_attention").compatibility_dropout == 0.3
    assert model.get_layer("position_fusion").input_dropout == 0.3
    assert model.get_layer("pooling").input_dropout == 0.3
    assert model.head.dropout == 0.3 and not model.head.use_bias
    paper = small_model("mpsan", dropout=0.3)
    assert paper.get_layer("embedding_dropout").rate == 0.3
    assert paper.get_layer("fused_dropout").rate == 0.3
    assert paper.get_layer("position_fusion").input_dropout == 0.0
    ids = pad(sentence(8), 2)
    for m in (model, paper):
        assert not np.allclose(to_numpy(m(ids, training=True)), to_numpy(m(ids, training=True)))


def test_sequence_longer_than_the_position_bias_names_the_limit():
    model = small_model(max_length=6)
    too_long = sentence(9)
    with pytest.raises(ValueError, match="max_length=6"):
        model(too_long)
    graph = tf.function(lambda x: model(x), input_signature=[tf.TensorSpec([None, None], tf.int32)])
    with pytest.raises(tf.errors.InvalidArgumentError, match="max_length=6"):
        graph(tf.constant(too_long))
    assert graph(tf.constant(sentence(6))).shape == (1, NUM_CLASSES)
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    with pytest.raises(ValueError, match="max_length=6"):
        model.fit(np.repeat(too_long, 4, axis=0), np.zeros(4), verbose=0)


def test_hidden_and_head_sizes_follow_the_embedding():
    model = zoo.build("mpsan", embedding_dim=50, vocabulary_size=VOCAB)
    assert model.hidden_dim is None and model.head_units is None
    assert model.get_layer("fa2_projection").units == 50
    assert model.head.hidden_units == 50
    with pytest.raises(ValueError, match="hidden_dim"):
        zoo.build("mpsan", embedding_dim=50, hidden_dim=40, vocabulary_size=VOCAB)
