"""The stock-Keras reference builds (``benchmarks/keras_posattn_reference``) compute our models' logits.

``benchmarks/bench_reference.py`` reports our speed against "the same
architecture written from stock Keras"; that ratio means something only if
the reference is the same function. For each family (and MPSAN's main
variants) a tiny zoo model with random weights and its reference, built from
``get_config()`` with the weights copied in, must give the same logits in
inference mode on token ids with trailing padding (one row mostly padding).
"""

import ast
from pathlib import Path

import keras
import numpy as np
import pytest

from keras_posattn import masks
from keras_posattn import zoo

import keras_posattn_reference
from keras_posattn_reference import build_reference
from keras_posattn_reference import load_all

#: The stock-Keras builds (benchmarks/keras_posattn_reference, on pytest's pythonpath).
REFERENCES = Path(keras_posattn_reference.__file__).parent

VOCAB = 50
LENGTH = 12
TINY = dict(vocabulary_size=VOCAB, num_classes=3, max_length=LENGTH, embedding_dim=16)

#: preset -> tiny overrides (widths the family lets us shrink).
CASES = {
    "mpsan": {},
    "mpsan_released": {},
    "mpsan_table2_model0": {},  # no branches, multi-dimensional pooling
    "mpsan_table2_model6": {},  # BW+D, FW+D, FA2, FA3
    "mpsan_table3_bf_fg": {},  # fusion gates
    "mpsan_table4_md_bf": {},  # multi-dimensional compatibility
    "mpsan_table5_no_fusion": {},  # the sources averaged
    "mpsan_table5_no_attention": {},  # no branches, mean pooling
    "disan": {},
    "spe_cnn": {"filters": 8},
    "spe_cnn_concatenated": {"filters": 8},
    "kim_cnn_static": {"filters": 4},
    "shallow_cnn": {"filters": 8},
    "dpcnn": {"filters": 8, "num_blocks": 3},
    "dpcnn_plus": {"filters": 8, "num_blocks": 3},
    "bilstm": {"units": 8, "head_units": 6},
    "transformer": {"num_heads": 2, "ff_dim": 16},
}


def token_ids(n=LENGTH, seed=0):
    """(4, n) ids in 1..VOCAB-1 with trailing padding: a full row, one 3
    shorter, one of 2 tokens (mostly padding) and one of 7."""
    ids = np.random.default_rng(seed).integers(1, VOCAB, size=(4, n)).astype("int32")
    for row, length in enumerate((n, n - 3, 2, 7)):
        ids[row, length:] = 0
    return ids


def randomize(model, seed=1):
    """Random non-zero values in every trainable weight (biases included), so a
    weight copied to the wrong place shows."""
    rng = np.random.default_rng(seed)
    for variable in model.trainable_weights:
        variable.assign(rng.normal(0.0, 0.2, variable.shape).astype("float32"))


def build_pair(name, **overrides):
    keras.utils.set_random_seed(0)
    ours = zoo.build(name, **{**TINY, **CASES.get(name, {}), **overrides})
    randomize(ours)
    return ours, build_reference(ours)


@pytest.mark.parametrize("name", sorted(CASES))
def test_reference_logits_match(name):
    ours, reference = build_pair(name)
    ids = token_ids()
    expected = np.asarray(ours(ids, training=False))
    got = np.asarray(reference(ids, training=False))
    assert got.dtype == np.float32 and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_dpcnn_reference_odd_lengths():
    # Odd lengths at every level: the reference's windows must start at 0, 2, 4...
    ours, reference = build_pair("dpcnn")
    ids = token_ids(n=11, seed=3)
    np.testing.assert_allclose(np.asarray(reference(ids, training=False)),
                               np.asarray(ours(ids, training=False)), rtol=1e-5, atol=1e-5)


def test_mpsan_reference_faraway_rules_and_shared_bias():
    # released Faraway radius (|i-j| < m) with the paper's other choices, shared b_P.
    ours, reference = build_pair("mpsan", faraway_rule="released", fusion_bias="shared",
                                 branch_masks=["fa2", "fa3+sd"])
    ids = token_ids(seed=5)
    np.testing.assert_allclose(np.asarray(reference(ids, training=False)),
                               np.asarray(ours(ids, training=False)), rtol=1e-5, atol=1e-5)


def test_mpsan_reference_rejects_mask_objects():
    ours = zoo.build("mpsan", **TINY, branch_masks=[masks.Backward() + masks.Distance()])
    with pytest.raises(NotImplementedError, match="short name"):
        build_reference(ours)


FAMILIES = ("mpsan", "disan", "spe_cnn", "kim_cnn", "shallow_cnn", "dpcnn", "bilstm",
            "transformer")
#: What a reference must not use: it would measure our code against itself.
FORBIDDEN = ("keras_posattn.layers", "keras_posattn.attention_ops")


def test_references_cover_the_families_and_use_no_library_layers():
    assert set(FAMILIES) <= set(load_all())
    for path in [REFERENCES / "__init__.py"] + [
            REFERENCES / f"{family}.py" for family in FAMILIES]:
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                assert not name.startswith(FORBIDDEN), (path.name, name)
