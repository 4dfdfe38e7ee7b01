"""HCAN (hierarchical and flat): the shared model checks on multi-sentence
documents, the parameter count at the paper's size, Table 2's variants, and
the batched, padded model against HCAN written from stock Keras layers, run
as the paper trains it: one document at a time."""

import keras
import numpy as np
import pytest
from model_checks import one_document, run_model_test, sample_documents, to_numpy

from keras_posattn import zoo
from keras_posattn.layers import MaskedGlobalPooling1D, TargetAttention
from keras_posattn.models import HCAN
from keras_posattn.preprocessing import DocumentPreprocessor
from keras_posattn.utils import count_parameters
from keras_posattn_reference import build_reference

SMALL = {"embedding_dim": 16, "units": 16, "num_heads": 4, "max_sentences": 64}


def small_model(name="hcan", seed=0, **overrides):
    keras.utils.set_random_seed(seed)
    config = dict(num_classes=3, vocabulary_size=40, max_length=12, **SMALL)
    if zoo.get_preset(name)["family"] == "hcan_flat":
        config.pop("max_sentences")
    config.update(overrides)
    return zoo.build(name, **config)


def test_shared_model_checks_hierarchical():
    run_model_test("hcan", SMALL, texts=sample_documents(8))


@pytest.mark.parametrize("name", ["hcan_one_sa_maxpool", "hcan_flat_two_sa_target"])
def test_shared_model_checks_variants(name):
    small = dict(SMALL)
    if zoo.get_preset(name)["family"] == "hcan_flat":
        small.pop("max_sentences")
    run_model_test(name, small, texts=sample_documents(8), check_export=False)


def test_parameter_count():
    """d = 512, 8 heads, 100 word and 64 sentence positions, 5 classes.

    Per level: six convolutions 3 * 512 * 512 + 512 = 786,944 each, layer
    norm 1,024, target vector 512 and key convolution 786,944: 5,510,144.
    Positions 100 * 512 + 64 * 512 = 83,968; classifier 512 * 5 + 5 = 2,565.
    """
    conv = 3 * 512 * 512 + 512
    level = 6 * conv + 1024 + 512 + conv
    model = zoo.build("hcan")
    assert count_parameters(model) == 2 * level + 83_968 + 2_565 == 11_106_821
    flat = zoo.build("hcan_flat")  # one level, 512 positions
    assert count_parameters(flat) == level + 512 * 512 + 2_565 == 5_774_853
    one = zoo.build("hcan_one_sa_maxpool")  # three convolutions, no target attention
    assert count_parameters(one) == 2 * (3 * conv + 1024) + 83_968 + 2_565


def test_table2_variants():
    names = zoo.list_models("hcan*")
    expected = {f"hcan{flat}_{n}_sa_{pool}": (flat == "_flat", n, pool)
                for flat in ("", "_flat") for n in ("one", "two") for pool in ("maxpool", "target")}
    assert set(expected) <= set(names)
    for name, (flat, n, pool) in expected.items():
        preset = zoo.get_preset(name)
        assert preset["family"] == ("hcan_flat" if flat else "hcan")
        assert preset["config"]["self_attentions"] == {"one": 1, "two": 2}[n]
        assert preset["config"]["pooling"] == {"maxpool": "max", "target": "target"}[pool]
        assert "yelp16" in preset["reported"]
    model = small_model("hcan_one_sa_maxpool")
    assert not model.get_layer("word_self_attention").parallel
    assert isinstance(model.get_layer("sentence_max_pool"), MaskedGlobalPooling1D)
    model = small_model("hcan")
    assert model.get_layer("sentence_self_attention").parallel
    assert isinstance(model.get_layer("sentence_target_attention"), TargetAttention)


def test_recipe_is_the_papers():
    recipe = zoo.get_preset("hcan")["recipe"]
    assert (recipe["optimizer"], recipe["learning_rate"], recipe["beta_2"]) == ("adam", 2e-5, 0.99)
    from keras_posattn.training.recipe import Recipe

    optimizer = Recipe.from_dict(recipe).make_optimizer()
    assert optimizer.beta_2 == 0.99 and optimizer.beta_1 == 0.9


@pytest.mark.parametrize("name", ["hcan", "hcan_one_sa_maxpool"])
@pytest.mark.filterwarnings("ignore:You are using a softmax over axis")
def test_batched_padded_equals_the_stock_keras_build_one_document_at_a_time(name):
    """The paper trains one document per step, without padding: the batched
    model, padded at both levels, must give the logits of HCAN written from
    stock Keras layers (``keras_posattn_reference.hcan``: Keras' Conv1D and
    LayerNormalization, plain ops, our weights copied in) run on one document
    at a time."""
    texts = ["the film was good. the music was great!", "a plot never bored me.",
             "", "scenes felt long? it was not good. the music! great"]
    pre = DocumentPreprocessor.from_texts(texts * 2)
    model = small_model(name, vocabulary_size=pre.vocabulary_size, dropout=0.1)
    rng = np.random.default_rng(0)
    for weight in model.weights:  # no zero biases that could hide leaking padding
        weight.assign(rng.normal(0.0, 0.3, tuple(weight.shape)).astype("float32"))
    reference = build_reference(model)
    ids = to_numpy(pre(texts))
    logits = to_numpy(model(np.pad(ids, [(0, 0), (0, 3), (0, 5)]), training=False))
    assert np.ptp(logits, axis=0).max() > 1e-3  # the documents differ
    for i, text in enumerate(texts):
        expected = to_numpy(reference(one_document(ids[i]), training=False))[0]
        np.testing.assert_allclose(logits[i], expected, atol=1e-5, err_msg=repr(text))


def test_sentence_order_matters_and_word_level_is_per_sentence():
    pre = DocumentPreprocessor.from_texts(["good film. bad music.", "bad music. good film."])
    model = small_model(vocabulary_size=pre.vocabulary_size)
    a, b = to_numpy(model(pre(["good film. bad music.", "bad music. good film."])))
    assert not np.allclose(a, b)  # sentence positions are learned
    # The same words as one sentence differ from two sentences.
    c = to_numpy(model(pre(["good film bad music."])))[0]
    assert not np.allclose(a, c)


def test_attention_maps_sentence_level():
    texts = ["good film. bad music! long scenes.", "fine."]
    pre = DocumentPreprocessor.from_texts(texts)
    model = small_model(vocabulary_size=pre.vocabulary_size)
    maps = model.attention_maps(to_numpy(pre(texts)))
    assert sorted(maps) == ["sentence_self_attention", "sentence_self_attention_tanh",
                            "sentence_target"]
    assert maps["sentence_self_attention"].shape == (2, 3, 3)
    assert maps["sentence_target"].shape == (2, 3)
    np.testing.assert_allclose(maps["sentence_target"].sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(maps["sentence_self_attention"][1, 0, :1], [1.0], atol=1e-5)
    assert np.all(maps["sentence_self_attention"][1, :, 1:] == 0)
    flat = small_model("hcan_flat_one_sa_target", vocabulary_size=pre.vocabulary_size)
    flat_maps = flat.attention_maps(np.array([[2, 3, 4, 0]], "int32"))
    assert sorted(flat_maps) == ["self_attention", "target"]
    assert flat_maps["self_attention"].shape == (1, 4, 4)


def test_bad_arguments():
    with pytest.raises(ValueError, match="self_attentions"):
        HCAN(self_attentions=3, **SMALL)
    with pytest.raises(ValueError, match="pooling"):
        HCAN(pooling="mean", **SMALL)
    with pytest.raises(ValueError, match="divisible"):
        HCAN(embedding_dim=16, units=18, num_heads=4)


def test_longer_than_position_table_is_an_error():
    model = small_model(max_length=4)
    with pytest.raises(Exception, match="max_length"):
        model(np.ones((1, 2, 6), "int32"))


@pytest.mark.parametrize("dtype_policy", ["mixed_float16", "mixed_bfloat16"], indirect=True)
def test_mixed_precision(dtype_policy):
    model = small_model()
    ids = np.zeros((3, 3, 5), "int32")
    ids[0, 0, :3] = [4, 5, 6]
    ids[0, 1, :2] = [7, 8]
    ids[1, 0, :1] = [9]
    logits = model(ids, training=False)
    assert keras.backend.standardize_dtype(logits.dtype) == "float32"
    assert np.isfinite(to_numpy(logits)).all()
