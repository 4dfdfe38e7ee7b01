"""CSPAN: the shared model checks, the semantic self-attention against NumPy,
parameter counts, and what each fusion scheme sees of word order."""

import keras
import numpy as np
import pytest
from layer_checks import to_numpy
from model_checks import run_model_test

from keras_posattn import zoo
from keras_posattn.utils import count_parameters

SMALL = {"embedding_dim": 16, "num_queries": 3, "dropout": 0.2}


# Table 5 (b) is the same model code with other switches: its export (the
# slowest check, the same path) is left to the base model's.
@pytest.mark.parametrize("name", ["cspan", "cspan_table5_b_position"])
def test_shared_model_checks(name):
    run_model_test(name, SMALL, check_export=name == "cspan")


@pytest.mark.parametrize("name", ["cspan_big", "cspan_table3_bilstm", "cspan_table3_self_att",
                                  "cspan_table5_a_embedding", "cspan_table5_c_relative",
                                  "cspan_table5_d_parallel"])
def test_variants_are_padding_invariant_and_finite(name):
    from model_checks import pad_inputs

    model = zoo.build(name, num_classes=3, vocabulary_size=30, **SMALL)
    ids = np.array([[5, 6, 7, 8, 9], [4, 2, 0, 0, 0], [0, 0, 0, 0, 0]], "int32")
    logits = to_numpy(model(ids))
    assert np.isfinite(logits).all()
    np.testing.assert_allclose(to_numpy(model(pad_inputs(ids, 30))), logits, atol=1e-5)


def test_semantic_attention_is_parameter_free_dot_attention():
    """S = LayerNorm(softmax(D D^T / sqrt(d)) D) (eq. 4): the library's
    MaskedSelfAttention(compatibility="dot") with no mask, no weights."""
    model = zoo.build("cspan", vocabulary_size=30, **SMALL)
    layer = model.get_layer("semantic_attention")
    assert layer.weights == [] and layer.positional_mask is None
    d = np.random.default_rng(0).normal(size=(1, 5, 16)).astype("float32")
    logits = d[0] @ d[0].T / np.sqrt(16)
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    np.testing.assert_allclose(to_numpy(layer(d))[0], p @ d[0], atol=1e-5)


def test_parameter_counts_at_paper_settings():
    """d = 300, 5 classes; the arithmetic is in the module docstring."""
    assert count_parameters(zoo.build("cspan")) == 2_079_005
    lstm = 2 * 4 * (150 * (300 + 150) + 150)
    norms, head = 2 * 600, 300 * 5 + 5
    mqa = 128 * 300 + 300 * 300 + 300 + 128 * 300 * 300
    stacked = lstm + 2 * 2 * 4 * (150 * (300 + 150) + 150)  # layers 2 and 3 read the 300-wide layer 1
    assert count_parameters(zoo.build("cspan_big")) == stacked + norms + mqa + head
    # The mean fusion keeps the pooling at O(md + d^2): 127 * 300 * 300 fewer at 128 queries.
    mean = zoo.build("cspan_big", query_fusion="mean")
    assert count_parameters(zoo.build("cspan_big")) - count_parameters(mean) == 127 * 300 * 300


def _order_sensitivity(name, seed=0):
    keras.utils.set_random_seed(seed)
    model = zoo.build(name, num_classes=3, vocabulary_size=30, **SMALL,
                      embedding_initializer=keras.initializers.RandomNormal(stddev=1.0))
    ids = np.array([[5, 6, 7, 8, 9, 10]], "int32")
    # Not a reversal: a symmetric relative-distance penalty cannot tell a text
    # from its mirror image.
    shuffled = ids[:, [2, 0, 5, 1, 4, 3]]
    return np.abs(to_numpy(model(ids)) - to_numpy(model(shuffled))).max()


def test_positional_information_reaches_the_classifier_only_where_the_scheme_has_it():
    """Table 5 (a) sees a bag of words (self-attention without positions and
    pooling are permutation-invariant); (b)-(e) see the order."""
    assert _order_sensitivity("cspan_table5_a_embedding") < 1e-5
    for name in ("cspan", "cspan_table5_b_position", "cspan_table5_c_relative",
                 "cspan_table5_d_parallel", "cspan_table3_bilstm"):
        assert _order_sensitivity(name) > 1e-3, name


def test_attention_maps():
    model = zoo.build("cspan", vocabulary_size=30, **SMALL)
    ids = np.array([[5, 6, 7, 0], [8, 0, 0, 0]], "int32")
    maps = model.attention_maps(ids)
    assert sorted(maps) == ["positional", "queries", "semantic"]
    assert maps["semantic"].shape == maps["positional"].shape == (2, 4, 4)
    assert maps["queries"].shape == (2, 3, 4)
    np.testing.assert_allclose(maps["queries"].sum(-1), 1.0, atol=1e-5)
    assert np.all(maps["queries"][1, :, 1:] == 0)


def test_bad_arguments():
    with pytest.raises(ValueError, match="fusion"):
        zoo.build("cspan", fusion="nope")
    with pytest.raises(ValueError, match="even"):
        zoo.build("cspan", embedding_dim=15)
