"""PyramidBlock: against NumPy (the paper's block, and with the shortcuts and
the LayerNorm of the deviation switches), its parts composed on the unpadded
text, the halved mask, a 7-block pyramid that gives the same outputs with 5 and
with 500 extra padding tokens, texts shorter than 2**blocks, saving and mixed
precision."""

import keras
import numpy as np
import pytest
from layer_checks import run_layer_test
from layer_checks import to_numpy
from sequence_checks import built
from sequence_checks import check_all_padding_sequence
from sequence_checks import padded_batch
from sequence_checks import with_padding
from test_conv_multi_head_self_attention import np_layer_norm
from test_masked_max_pooling1d import reference as pool_reference
from test_multi_head_self_attention import reference as attention_reference
from test_residual_conv_block import reference as convolutions_reference

from keras_posattn.layers import MaskedGlobalPooling1D
from keras_posattn.layers import PyramidBlock

UNITS, LSTM, HEADS = 8, 4, 2
# (shortcuts, block_norm): the paper, then the deviations.
VARIANTS = [((), False), (("attention",), False), (("bilstm",), False), ((), True),
            (("bilstm", "attention"), True)]
DEVIATION = {"shortcuts": ["bilstm", "attention"], "block_norm": True}

# A pyramid's top levels are one position long: a softmax over one key is the point.
pytestmark = pytest.mark.filterwarnings("ignore:You are using a softmax over axis")


def small_block(**kwargs):
    return PyramidBlock(units=UNITS, lstm_units=LSTM, num_heads=HEADS, **kwargs)


def test_is_its_parts_applied_to_the_unpadded_text():
    """pool -> Bi-LSTM -> self-attention -> x + f(x), each on the real tokens."""
    x, mask = padded_batch([7, 4, 1], n=7, width=UNITS)
    block = built(small_block(), x)
    out, weights = (to_numpy(t) for t in block(x, mask=mask, return_attention_scores=True))
    new_mask = to_numpy(block.compute_mask(x, mask))
    assert out.shape == (3, 4, UNITS) and weights.shape == (3, HEADS, 4, 4)
    for b, length in enumerate(mask.sum(axis=1)):
        real = x[b:b + 1, :length]
        h = block.pool(real)
        h = block.recurrent(h)
        h = block.attention(h)
        expected = to_numpy(block.convolutions(h))[0]
        kept = -(-length // 2)
        assert new_mask[b].tolist() == [i < kept for i in range(4)]
        np.testing.assert_allclose(out[b, :kept], expected, atol=1e-5)
        assert np.all(out[b, kept:] == 0)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def numpy_lstm(layer, x):
    """Keras' LSTM (gates i, f, c, o; sigmoid and tanh) over x (n, d), in order."""
    cell = layer.cell
    kernel, recurrent, bias = (to_numpy(w).astype("float64")
                               for w in (cell.kernel, cell.recurrent_kernel, cell.bias))
    h = c = np.zeros(cell.units)
    outputs = []
    for step in x:
        i, f, g, o = np.split(step @ kernel + h @ recurrent + bias, 4)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        outputs.append(h)
    return np.stack(outputs)


def numpy_block(block, x):
    """The block on one unpadded sequence x (n, units), in float64."""
    pooled = pool_reference(x.astype("float64"), len(x), block.pool_size, block.pool_size)
    h = np.concatenate([numpy_lstm(block.recurrent.forward_layer, pooled),
                        numpy_lstm(block.recurrent.backward_layer, pooled[::-1])[::-1]], axis=-1)
    if "bilstm" in block.shortcuts:
        h = pooled + h
    attended, weights = attention_reference(block.attention, h)
    if "attention" in block.shortcuts:
        attended = h + attended
    out = convolutions_reference(block.convolutions, attended)
    if block.block_norm:
        out = np_layer_norm(out, *(to_numpy(w).astype("float64") for w in
                                   (block.norm.gamma, block.norm.beta)), block.norm.epsilon)
    return out, weights


@pytest.mark.parametrize("shortcuts, block_norm", VARIANTS)
def test_matches_numpy_reference_on_each_sequence(shortcuts, block_norm):
    """pool -> Bi-LSTM (+ its input) -> attention (+ its input) -> x + f(x)
    (-> LayerNorm), in NumPy on each text's real tokens."""
    x, mask = padded_batch([7, 4, 1], n=7, width=UNITS)
    block = built(small_block(shortcuts=shortcuts, block_norm=block_norm), x)
    out, weights = (to_numpy(t) for t in block(x, mask=mask, return_attention_scores=True))
    for b, length in enumerate(mask.sum(axis=1)):
        expected, expected_weights = numpy_block(block, x[b, :length])
        kept = len(expected)
        np.testing.assert_allclose(out[b, :kept], expected, atol=1e-4, rtol=1e-4)
        np.testing.assert_allclose(weights[b, :, :kept, :kept], expected_weights, atol=1e-5)
        assert np.all(out[b, kept:] == 0)


def test_attention_shortcut_keeps_the_positions_apart():
    """At initialisation the attention is uniform: without a shortcut every
    position of its output is the same vector (the mean of the values); with
    one, the Bi-LSTM's position-wise features pass."""
    x = np.random.default_rng(0).normal(size=(1, 40, UNITS)).astype("float32")
    spread = {}
    for shortcuts in ((), ("attention",)):
        keras.utils.set_random_seed(0)
        stages, _ = small_block(shortcuts=shortcuts).stage_outputs(x)
        spread[shortcuts] = float(np.std(to_numpy(stages["attention"])[0], axis=0).mean())
    assert spread[()] < 0.05 * spread[("attention",)], spread


def test_stage_outputs_end_with_the_block_output():
    x, mask = padded_batch([6, 3], n=6, width=UNITS)
    for kwargs in ({}, DEVIATION):
        block = built(small_block(**kwargs), x)
        stages, _ = block.stage_outputs(x, mask=mask)
        assert list(stages) == ["pool", "bilstm", "attention", "convolutions"] + (
            ["norm"] if kwargs else [])
        np.testing.assert_array_equal(to_numpy(stages[list(stages)[-1]]),
                                      to_numpy(block(x, mask=mask)))


def test_shortcut_arguments_are_checked():
    with pytest.raises(ValueError, match="Unknown shortcut"):
        small_block(shortcuts=["conv"])
    with pytest.raises(ValueError, match="units=8 channels, got 5"):
        small_block(shortcuts=["bilstm"])(np.zeros((1, 4, 5), "float32"))
    assert small_block(shortcuts=["attention", "bilstm"]).shortcuts == ("bilstm", "attention")
    assert small_block(shortcuts="attention").get_config()["shortcuts"] == ["attention"]


def pyramid(num_blocks=7, seed=0, **kwargs):
    """Embedding-free EPN body: num_blocks pyramid blocks, then a global max pool."""
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((None, UNITS))
    mask = keras.Input((None,), dtype="bool")
    h, m = inputs, mask
    blocks = [small_block(name=f"block_{i}", **kwargs) for i in range(num_blocks)]
    for block in blocks:
        new_m = block.compute_mask(h, m)
        h = block(h, mask=m)
        m = new_m
    pooled = MaskedGlobalPooling1D("max")(h, mask=m)
    return keras.Model([inputs, mask], pooled)


# The paper's block: its 7-block pyramid with 5 and 500 extra padding tokens
# is checked through the model in test_epn (the default suite), here with
# ``-m slow`` (an eager Bi-LSTM over 500 positions a block is most of it).
@pytest.mark.parametrize("deviation", [pytest.param({}, marks=pytest.mark.slow), DEVIATION])
def test_seven_blocks_same_output_with_5_and_500_extra_padding_tokens(deviation):
    real = np.random.default_rng(7).normal(size=(1, 20, UNITS)).astype("float32")
    model = pyramid(7, **deviation)
    outputs = []
    for extra in (5, 500):
        x, mask = with_padding(real, extra, seed=extra, garbage=30.0)
        outputs.append(to_numpy(model([x, mask])))
    np.testing.assert_allclose(outputs[0], outputs[1], atol=1e-5)
    np.testing.assert_allclose(outputs[0], to_numpy(model([real, np.ones((1, 20), bool)])),
                               atol=1e-5)


@pytest.mark.parametrize("deviation", [{}, DEVIATION])
@pytest.mark.parametrize("length", [1, 2, 5])
def test_text_shorter_than_the_pyramid(length, deviation):
    """A text of `length` tokens through 7 blocks: lengths go 5, 3, 2, 1, 1...;
    the outputs are finite, and padding still changes nothing."""
    real = np.random.default_rng(length).normal(size=(1, length, UNITS)).astype("float32")
    model = pyramid(7, seed=1, **deviation)
    unpadded = to_numpy(model([real, np.ones((1, length), bool)]))
    assert np.isfinite(unpadded).all() and np.abs(unpadded).sum() > 0
    x, mask = with_padding(real, 40, seed=3)  # padded positions survive 5 halvings
    np.testing.assert_allclose(to_numpy(model([x, mask])), unpadded, atol=1e-5)


@pytest.mark.parametrize("deviation", [{}, DEVIATION])
def test_layer_checks(deviation):
    x, mask = padded_batch([6, 3], n=6, width=UNITS)
    run_layer_test(lambda: small_block(dropout=0.1, **deviation), x, mask=mask,
                   call_kwargs={"return_attention_scores": True},
                   expected_output_shape=[(2, 3, UNITS), (2, HEADS, 3, 3)],
                   # Bi-LSTM, attention, convolutions (and the LayerNorm)
                   expected_num_trainable_weights=6 + 8 + 4 + 2 * bool(deviation))
    with pytest.raises(ValueError, match="twice lstm_units"):
        PyramidBlock(units=8, lstm_units=8)


@pytest.mark.parametrize("dtype_policy", ["float32", "mixed_float16", "mixed_bfloat16"],
                         indirect=True)
@pytest.mark.parametrize("deviation", [{}, DEVIATION])
def test_all_padding_rows_and_mixed_precision(dtype_policy, deviation):
    x, mask = padded_batch([6, 0], n=6, width=UNITS, garbage=3.0)
    check_all_padding_sequence(lambda: small_block(**deviation), x, mask, dtype_policy,
                               call_kwargs={"return_attention_scores": True})


def test_kernel_regularizer_reaches_every_kernel_including_the_lstm():
    # EPN's ``l2`` promises an L2 term on every kernel of its blocks.
    layer = PyramidBlock(units=8, lstm_units=4, num_heads=2,
                         kernel_regularizer=keras.regularizers.L2(0.01))
    tokens = np.random.default_rng(0).normal(size=(2, 12, 8)).astype("float32")
    layer(tokens)
    kernels = [w for w in layer.weights if w.path.endswith("kernel")
               and "recurrent" not in w.path]
    lstm_kernels = [w for w in kernels if "bilstm" in w.path]
    assert len(lstm_kernels) == 2, [w.path for w in kernels]
    expected = sum(0.01 * float(np.sum(to_numpy(w) ** 2)) for w in kernels)
    np.testing.assert_allclose(sum(float(to_numpy(x)) for x in layer.losses), expected,
                               rtol=1e-5)
