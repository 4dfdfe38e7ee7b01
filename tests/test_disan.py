"""DiSAN: the shared model checks, its 1.8M parameters, the direction names
(DiSAN's "forward" query sees earlier tokens), a NumPy reference of the
forward pass, and the released code's L2 convention."""

import re

import keras
import numpy as np
import pytest
from layer_checks import to_numpy
from model_checks import check_mixed_precision
from model_checks import run_model_test
from numpy_reference import check_against_reference
from numpy_reference import elu
from numpy_reference import masked_softmax

from keras_posattn import masks
from keras_posattn import zoo
from keras_posattn.utils import count_parameters

VOCAB = 30


def small_model(seed=0, **overrides):
    keras.utils.set_random_seed(seed)
    config = dict(num_classes=3, vocabulary_size=VOCAB, embedding_dim=6)
    config.update(overrides)
    return zoo.build("disan", **config)


def test_shared_model_checks():
    run_model_test("disan", {"embedding_dim": 16, "dropout": 0.2})


def test_parameter_count():
    """2 x (90,300 + 180,300 + 180,300) + 2 x (600*600 + 600) + (600*300 + 300) + 300*5."""
    model = zoo.build("disan", num_classes=5, vocabulary_size=VOCAB)
    count = count_parameters(model)
    assert count == 2 * (90_300 + 180_300 + 180_300) + 721_200 + 180_300 + 1_500 == 1_804_800
    assert round(count / 1e6, 1) == 1.8  # MPSAN's Table 1: DiSAN 1.8m
    assert [tuple(w.shape) for w in model.embedding.trainable_weights] == [(VOCAB, 300)]


def test_direction_names():
    """DiSAN's "forward" branch: query i attends only keys j < i (this
    library's Backward mask); "backward": only j > i."""
    model = small_model()
    assert model.get_layer("forward_attention").positional_mask == masks.Backward()
    assert model.get_layer("backward_attention").positional_mask == masks.Forward()
    lengths = (6, 3)
    ids = np.zeros((2, 8), "int32")
    for i, n in enumerate(lengths):
        ids[i, :n] = np.arange(2, 2 + n)
    maps = model.attention_maps(ids)
    assert sorted(maps) == ["backward", "forward", "pooling"]
    assert maps["forward"].shape == maps["backward"].shape == (2, 8, 8)
    assert maps["pooling"].shape == (2, 8)
    for i, n in enumerate(lengths):
        forward, backward = maps["forward"][i], maps["backward"][i]
        q, k = np.indices(forward.shape)
        # The weights are non-negative, so a zero feature-mean means zero for every feature.
        assert np.all(forward[k >= q] == 0) and np.all(backward[k <= q] == 0)
        # Every real query with an allowed key sums to one; the first token
        # (forward) and the last real one (backward) see nothing.
        np.testing.assert_allclose(forward[1:n].sum(-1), 1.0, atol=1e-5)
        np.testing.assert_allclose(backward[: n - 1].sum(-1), 1.0, atol=1e-5)
        assert forward[0].sum() == 0 and backward[n - 1].sum() == 0
        assert np.all(forward[n:] == 0) and np.all(forward[:, n:] == 0)
        np.testing.assert_allclose(maps["pooling"][i].sum(), 1.0, atol=1e-5)


# --- a whole-model NumPy reference (Shen et al., section 4) ---


def numpy_disan(model, ids):
    get = lambda layer, attr: to_numpy(getattr(model.get_layer(layer), attr)).astype("float64")  # noqa: E731
    table = to_numpy(model.embedding.embeddings).astype("float64")
    out = []
    for row in ids:
        n = int((row != 0).sum())
        x = table[row[:n]]
        q, k = np.indices((n, n))
        fused = []
        for direction, allowed in (("forward", k < q), ("backward", k > q)):
            h = elu(x @ get(f"{direction}_projection", "kernel") + get(f"{direction}_projection", "bias"))
            att = f"{direction}_attention"
            # f(h_k, h_q) = 5 tanh((W_1 h_k + W_2 h_q + b) / 5), one logit per feature
            logits = (h @ get(att, "key_kernel"))[None, :, :] + (h @ get(att, "query_kernel"))[:, None, :]
            logits = 5.0 * np.tanh((logits + get(att, "bias")) / 5.0)  # [q, k, feature]
            p = masked_softmax(logits, allowed[:, :, None], axis=1)
            s = (p * h[None, :, :]).sum(axis=1)
            gate = f"{direction}_fusion_gate"
            f = 1.0 / (1.0 + np.exp(-(s @ get(gate, "attention_kernel") + h @ get(gate, "input_kernel")
                                      + get(gate, "bias"))))
            fused.append(f * h + (1.0 - f) * s)
        u = np.concatenate(fused, axis=-1)
        hidden = elu(u @ get("pooling", "kernel_1") + get("pooling", "bias_1"))
        scores = hidden @ get("pooling", "kernel_2") + get("pooling", "bias_2")
        p = masked_softmax(scores, np.ones_like(scores, bool), axis=0)
        pooled = (p * u).sum(axis=0)
        head = model.head
        z = np.maximum(pooled @ to_numpy(head.hidden.kernel) + to_numpy(head.hidden.bias), 0.0)
        out.append(z @ to_numpy(head.logits.kernel))  # no logits bias (released code)
    return np.stack(out)


# Keras warns that a softmax over one position is constant: the 1-token row.
@pytest.mark.filterwarnings("ignore:You are using a softmax over axis")
def test_forward_pass_matches_numpy_reference():
    model = small_model(trainable_embeddings="all")
    assert not model.head.use_bias
    check_against_reference(model, numpy_disan, (8, 4, 1), VOCAB, seed=11, atol=2e-4)


def test_l2_follows_the_tf1_convention():
    """wd * sum(w^2) / 2 on every kernel (not biases, not the embedding)."""
    model = small_model()
    model(np.array([[2, 3, 4]], "int32"))
    kernels = [w for w in model.trainable_weights
               if re.search(r"kernel(_\d)?$", w.path) and "token_embedding" not in w.path]
    assert len(kernels) == 2 * 5 + 2 + 2  # per direction W_h, W_1, W_2, two gate kernels; pooling; head
    expected = sum(1e-4 * float(np.sum(to_numpy(w).astype("float64") ** 2)) / 2 for w in kernels)
    np.testing.assert_allclose(float(sum(to_numpy(x) for x in model.losses)), expected, rtol=1e-5)


def test_dropout_follows_the_released_code():
    model = small_model(dropout=0.3)
    for direction in ("forward", "backward"):
        assert model.get_layer(f"{direction}_input_dropout").rate == 0.3
        assert model.get_layer(f"{direction}_attention").compatibility_dropout == 0.3
        assert model.get_layer(f"{direction}_attention").dropout == 0.0  # weights undropped
    assert model.get_layer("pooling").input_dropout == 0.3
    assert model.head.dropout == 0.3


@pytest.mark.parametrize("dtype_policy", ["mixed_float16", "mixed_bfloat16"], indirect=True)
def test_mixed_precision(dtype_policy):
    check_mixed_precision(small_model())
