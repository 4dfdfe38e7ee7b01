"""The stock-Keras references of the deeper families compute our logits.

``benchmarks/keras_posattn_reference/{cspan,epn,han,hcan}.py`` rebuild CSPAN, EPN, HAN,
HCAN and the flat HCAN from stock Keras layers and ``keras.ops`` for the
speed comparison; a ratio only means something if both models compute the
same function. Each case builds a tiny zoo model, its reference with our
weights copied in (``build_reference``), and compares the logits in
inference mode on token ids with trailing padding: full rows, short rows, a
one-token row and an empty row; for documents, an all-padding sentence
between real ones, a one-word document and a missing last sentence.
"""

import ast
from pathlib import Path

import keras
import numpy as np
import pytest

from keras_posattn import zoo

import keras_posattn_reference
from keras_posattn_reference import build_reference

#: The stock-Keras builds (benchmarks/keras_posattn_reference, on pytest's pythonpath).
REFERENCES = Path(keras_posattn_reference.__file__).parent

FAMILY_FILES = ("cspan", "epn", "han", "hcan")
COMMON = dict(vocabulary_size=50, num_classes=3, embedding_dim=16)


def _randomize(model, rng):
    """Every weight drawn anew: biases, LayerNorm betas and the like start at
    zero, which would hide padding that leaks through them (a bias added at a
    padded position and never zeroed). Word vectors N(0, 1): with the default
    U(-0.05, 0.05) table CSPAN's parameter-free attentions are nearly uniform
    and would hide a wrong mask."""
    for weight in model.weights:
        scale = 1.0 if "token_embedding" in weight.path else 0.3
        weight.assign(rng.normal(0.0, scale, tuple(weight.shape)).astype("float32"))


def _texts(rng, n=13, lengths=(13, 8, 5, 1, 0)):
    ids = rng.integers(2, 50, size=(len(lengths), n)).astype("int32")
    for row, length in enumerate(lengths):
        ids[row, length:] = 0
    return ids


def _documents(rng, sentences=4, words=6):
    ids = rng.integers(2, 50, size=(3, sentences, words)).astype("int32")
    ids[0, :, 4:] = 0      # sentences of 4 words at most
    ids[0, 1] = 0          # an all-padding sentence between real ones
    ids[0, 3, 1:] = 0      # a one-word sentence
    ids[1, 1:] = 0         # a one-word document
    ids[1, 0, 1:] = 0
    ids[2, 3] = 0          # a missing last sentence
    return ids


CASES = [
    # (preset, overrides, inputs)
    ("cspan", dict(num_queries=3), "texts"),
    ("cspan_big", dict(num_queries=2), "texts"),                       # 3 Bi-LSTM layers
    ("cspan_table3_bilstm", {}, "texts"),
    ("cspan_table3_self_att", dict(num_queries=2), "texts"),           # F = P
    ("cspan_table5_b_position", dict(query_fusion="mean"), "texts"),   # sinusoids
    ("cspan_table5_c_relative", dict(num_queries=2), "texts"),         # -|i - j|
    ("cspan_table5_d_parallel", dict(num_queries=2), "texts"),
    ("epn_blocks3", dict(units=8, region_filters=(2, 3, 3), num_heads=2), "texts"),
    # 13 -> 7 -> 4 -> 2 -> 1 -> 1 positions; a ReLU region embedding.
    ("epn", dict(num_blocks=5, units=12, region_filters=(4, 4, 4), num_heads=3,
                 region_activation="relu"), "texts"),
    ("epn_region5", dict(num_blocks=2, units=6, region_filters=(6,), num_heads=2), "texts"),
    ("han", dict(units=4, attention_units=6, dropout=0.2), "documents"),
    ("hcan", dict(max_length=6, max_sentences=4, units=8, num_heads=2), "documents"),
    ("hcan_one_sa_maxpool", dict(max_length=6, max_sentences=4, units=8, num_heads=2),
     "documents"),
    ("hcan_one_sa_target", dict(max_length=6, max_sentences=4, units=8, num_heads=2,
                                project_values=True), "documents"),
    ("hcan_flat", dict(max_length=13, units=8, num_heads=2), "texts"),
    ("hcan_flat_two_sa_maxpool", dict(max_length=13, units=8, num_heads=4), "texts"),
]


def _count(weights):
    return sum(int(np.prod(w.shape)) for w in weights)


@pytest.mark.filterwarnings("ignore:You are using a softmax over axis")
@pytest.mark.parametrize("preset,overrides,inputs", CASES, ids=[c[0] for c in CASES])
def test_reference_logits_match(preset, overrides, inputs):
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    ids = _texts(rng) if inputs == "texts" else _documents(rng)
    model = zoo.build(preset, **COMMON, **overrides)
    _randomize(model, rng)
    reference = build_reference(model)

    assert _count(reference.trainable_weights) == _count(model.trainable_weights)
    ours = np.asarray(model(ids, training=False))
    theirs = np.asarray(reference(ids, training=False))
    assert theirs.dtype == np.float32 and theirs.shape == ours.shape
    assert np.all(np.isfinite(theirs))
    assert np.ptp(ours, axis=0).max() > 1e-3  # the rows differ: not a constant function
    np.testing.assert_allclose(theirs, ours, rtol=1e-5, atol=1e-5)


def test_references_import_nothing_from_the_library():
    # A reference built from our layers would time our code against itself.
    for name in FAMILY_FILES:
        tree = ast.parse((REFERENCES / f"{name}.py").read_text())
        modules = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                   for alias in node.names]
        modules += [node.module or "" for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom)]
        assert not [m for m in modules if m.startswith("keras_posattn")], name
