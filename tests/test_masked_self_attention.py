"""MaskedSelfAttention against a NumPy implementation of MPSAN eqs. (5)-(12).

Paper: f(h_i, h_j) = act((U h_i + V h_j + b) / c) with i the key, j the query
(eq. 6); s_j = sum_i softmax_i(f(h_i, h_j) + M_ij) h_i (eq. 7). The library's
matrices are [query, key]; the reference below works query by query.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf
from layer_checks import gradients
from layer_checks import randomize_weights
from layer_checks import run_layer_test
from layer_checks import to_numpy
from test_masks import backward
from test_masks import distance
from test_masks import faraway_paper
from test_masks import forward
from test_masks import paper_matrix
from test_masks import scaled_distance

from keras_posattn import masks
from keras_posattn.layers import MaskedSelfAttention

D = 8

# Short name -> the paper's additive matrix M (0 / penalty / -inf), [query, key].
PAPER_MASKS = {
    None: lambda n: np.zeros((n, n)),
    "fa2": lambda n: paper_matrix(faraway_paper(2), n),
    "bw+sd": lambda n: paper_matrix(lambda i, j: backward(i, j) + scaled_distance(i, j), n),
    "fw+d": lambda n: paper_matrix(lambda i, j: forward(i, j) + distance(i, j), n),
}


# --- NumPy reference ---


def np_elu(x):
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0)))


def np_act(x, activation, c):
    if activation == "elu":
        return np_elu(x / c)
    if activation == "scaled_tanh":
        return c * np.tanh(x / c)
    assert activation == "linear"
    return x / c


def reference(h, padding, paper_mask, compatibility, activation, c, weights):
    """Masked self-attention, one query at a time.

    Args:
        h: (B, n, d) inputs. padding: (B, n) bool, True at real tokens.
        paper_mask: (n, n) additive M, [query, key], -inf where blocked.
        weights: dict with the paper's U, V (vectors for the 1-D form,
            (d, d) matrices acting on column vectors for M-D) and b.

    Returns:
        outputs (B, n, d) and attention weights (B, n, n) or (B, n, n, d).
    """
    h = h.astype("float64")
    B, n, d = h.shape
    md = compatibility == "multi_dimensional"
    out = np.zeros((B, n, d))
    probs = np.zeros((B, n, n, d) if md else (B, n, n))
    for bi in range(B):
        for q in range(n):
            if not padding[bi, q]:
                continue  # padding query: zero row
            keys = [
                k for k in range(n) if padding[bi, k] and np.isfinite(paper_mask[q, k])
            ]
            if not keys:
                continue  # no allowed key: zero output, zero weights
            logits = []
            for k in keys:
                if compatibility == "dot":
                    f = h[bi, q] @ h[bi, k] / np.sqrt(d)
                elif compatibility == "additive":
                    x = weights["U"] @ h[bi, k] + weights["V"] @ h[bi, q] + weights["b"]
                    f = np_act(x, activation, c)
                else:
                    x = weights["U"] @ h[bi, k] + weights["V"] @ h[bi, q] + weights["b"]
                    f = np_act(x, activation, c)  # (d,), one logit per feature
                logits.append(f + paper_mask[q, k])
            logits = np.stack(logits)  # (len(keys),) or (len(keys), d)
            e = np.exp(logits - logits.max(axis=0))
            p = e / e.sum(axis=0)  # softmax over the allowed keys
            for idx, k in enumerate(keys):
                probs[bi, q, k] = p[idx]
                out[bi, q] += p[idx] * h[bi, k]
    return out, probs


def paper_weights(layer):
    """The layer's weights in the paper's notation (U acts on h_key)."""
    if layer.compatibility == "dot":
        return {}
    U = to_numpy(layer.key_kernel).astype("float64")
    V = to_numpy(layer.query_kernel).astype("float64")
    b = to_numpy(layer.bias).astype("float64")
    if layer.compatibility == "additive":
        return {"U": U[:, 0], "V": V[:, 0], "b": float(b)}
    # Keras kernels act on row vectors (h @ K); the paper's matrices are K^T.
    return {"U": U.T, "V": V.T, "b": b}


def random_inputs(batch=3, n=7, d=D, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(batch, n, d)).astype("float32")


def built_layer(h, seed=3, **kwargs):
    layer = MaskedSelfAttention(**kwargs)
    layer(h)
    randomize_weights(layer, seed=seed, scale=0.7)
    return layer


CASES = [
    (compat, act, mask)
    for compat in ("additive", "multi_dimensional")
    for act in ("elu", "scaled_tanh", "linear")
    for mask in PAPER_MASKS
] + [("dot", "elu", mask) for mask in PAPER_MASKS]


@pytest.mark.parametrize("compatibility, activation, mask", CASES)
def test_matches_numpy_reference(compatibility, activation, mask):
    h = random_inputs(batch=3, n=7)
    padding = np.array([[1] * 7, [1] * 4 + [0] * 3, [1] * 2 + [0] * 5], dtype=bool)
    layer = built_layer(
        h, mask=mask, compatibility=compatibility, activation=activation, scale=5.0
    )
    out, weights = layer(h, mask=padding, return_attention_scores=True)
    ref_out, ref_weights = reference(
        h, padding, PAPER_MASKS[mask](7), compatibility, activation, 5.0, paper_weights(layer)
    )
    np.testing.assert_allclose(to_numpy(out), ref_out, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(to_numpy(weights), ref_weights, atol=1e-5, rtol=1e-5)
    # The reference is not trivial: some weights are far from uniform.
    assert np.abs(np.diff(ref_weights[0, 3], axis=0)).max() > 1e-3


def test_released_scale_and_no_padding_mask():
    # Other c, no padding mask at all (every position real).
    h = random_inputs(batch=2, n=6)
    layer = built_layer(h, mask="fa3", compatibility="additive", activation="scaled_tanh", scale=2.0)
    out, weights = layer(h, return_attention_scores=True)
    ref_out, ref_weights = reference(
        h, np.ones((2, 6), bool), paper_matrix(faraway_paper(3), 6),
        "additive", "scaled_tanh", 2.0, paper_weights(layer),
    )
    np.testing.assert_allclose(to_numpy(out), ref_out, atol=1e-5)
    np.testing.assert_allclose(to_numpy(weights), ref_weights, atol=1e-5)


def test_faraway_rule_reaches_the_mask():
    layer = MaskedSelfAttention(mask="fa3", faraway_rule="released")
    assert layer.positional_mask == masks.Faraway(3, rule="released")
    layer = MaskedSelfAttention(mask=masks.Backward() + masks.ScaledDistance())
    assert layer.positional_mask == masks.parse("bw+sd")


@pytest.mark.parametrize("compatibility", ["additive", "multi_dimensional", "dot"])
def test_standard_layer_checks(compatibility):
    h = random_inputs(batch=2, n=6)
    padding = np.array([[1] * 6, [1] * 3 + [0] * 3], dtype=bool)
    weight_shape = (2, 6, 6, D) if compatibility == "multi_dimensional" else (2, 6, 6)
    run_layer_test(
        lambda: MaskedSelfAttention(
            mask="bw+sd",
            compatibility=compatibility,
            activation="scaled_tanh",
            kernel_regularizer="l2",
        ),
        h,
        mask=padding,
        call_kwargs={"return_attention_scores": True},
        expected_output_shape=[(2, 6, D), weight_shape],
        expected_num_trainable_weights=0 if compatibility == "dot" else 3,
    )


def test_standard_layer_checks_without_mask_and_with_dropout():
    run_layer_test(
        lambda: MaskedSelfAttention(mask="fa2", dropout=0.2),
        random_inputs(batch=2, n=5),
        expected_output_shape=(2, 5, D),
    )


def test_weight_shapes():
    h = random_inputs(batch=1, n=3)
    additive = built_layer(h, compatibility="additive")
    assert [tuple(w.shape) for w in additive.trainable_weights] == [(D, 1), (D, 1), ()]
    md = built_layer(h, compatibility="multi_dimensional")
    assert [tuple(w.shape) for w in md.trainable_weights] == [(D, D), (D, D), (D,)]
    assert built_layer(h, compatibility="dot").trainable_weights == []


@pytest.mark.parametrize("compatibility", ["additive", "multi_dimensional", "dot"])
def test_attention_score_shapes_and_dtype(compatibility):
    h = random_inputs(batch=2, n=5)
    layer = MaskedSelfAttention(compatibility=compatibility)
    out, weights = layer(h, return_attention_scores=True)
    assert tuple(out.shape) == (2, 5, D)
    expected = (2, 5, 5, D) if compatibility == "multi_dimensional" else (2, 5, 5)
    assert tuple(weights.shape) == expected
    assert weights.dtype == "float32"
    # Without the flag only the output comes back.
    assert tuple(layer(h).shape) == (2, 5, D)
    # Without any mask every row sums to 1 over keys.
    np.testing.assert_allclose(to_numpy(weights).sum(axis=2), 1.0, atol=1e-5)


def test_errors():
    with pytest.raises(ValueError, match="compatibility"):
        MaskedSelfAttention(compatibility="bilinear")
    with pytest.raises(ValueError, match="activation"):
        MaskedSelfAttention(activation="relu")
    with pytest.raises(ValueError, match="Unknown mask"):
        MaskedSelfAttention(mask="backward")


# --- direction, in words ---


def test_backward_output_depends_only_on_earlier_tokens():
    h = random_inputs(batch=1, n=6)
    layer = built_layer(h, mask="bw")
    changed = h.copy()
    changed[0, 3] += 5.0  # change the 4th token
    before, after = to_numpy(layer(h)), to_numpy(layer(changed))
    # Under Backward, tokens 1-3 cannot see token 4: unchanged.
    np.testing.assert_array_equal(before[0, :3], after[0, :3])
    # Token 5 sees token 4: changed.
    assert not np.allclose(before[0, 4], after[0, 4])
    # The 3rd token's weights are on tokens 1 and 2 only.
    _, weights = layer(h, return_attention_scores=True)
    w = to_numpy(weights)[0, 2]
    assert np.all(w[:2] > 0) and np.all(w[2:] == 0)


def test_forward_output_depends_only_on_later_tokens():
    h = random_inputs(batch=1, n=6)
    layer = built_layer(h, mask="fw")
    changed = h.copy()
    changed[0, 2] += 5.0  # change the 3rd token
    before, after = to_numpy(layer(h)), to_numpy(layer(changed))
    # Under Forward, tokens 3-6 cannot see token 3 (tokens 4-6 are after it).
    np.testing.assert_array_equal(before[0, 3:], after[0, 3:])
    assert not np.allclose(before[0, 1], after[0, 1])


# --- padding invariance ---


def _pad(x, extra, value=0.0):
    widths = [(0, 0), (0, extra)] + [(0, 0)] * (x.ndim - 2)
    return np.pad(x, widths, constant_values=value)


@pytest.mark.parametrize("compatibility", ["additive", "multi_dimensional", "dot"])
@pytest.mark.parametrize("mask", ["bw+sd", "fa2", None])
def test_padding_invariance_explicit_mask(compatibility, mask):
    rng = np.random.default_rng(5)
    length = 6
    h = rng.normal(size=(1, length, D)).astype("float32")
    layer = built_layer(h, mask=mask, compatibility=compatibility)
    results = []
    for extra in (5, 50):
        # Padding positions hold garbage: it must not leak in.
        padded = _pad(h, extra)
        padded[0, length:] = rng.normal(size=(extra, D)) * 10
        padding = np.arange(length + extra)[None] < length
        out, weights = layer(padded, mask=padding, return_attention_scores=True)
        out, weights = to_numpy(out), to_numpy(weights)
        assert np.all(out[0, length:] == 0)  # padding queries: zero rows
        assert np.all(weights[0, :, length:] == 0)  # padding keys: zero weight
        assert np.all(weights[0, length:] == 0)
        results.append((out[0, :length], weights[0, :length, :length]))
    np.testing.assert_allclose(results[0][0], results[1][0], atol=1e-6)
    np.testing.assert_allclose(results[0][1], results[1][1], atol=1e-6)
    # And the same as the unpadded sentence.
    out, weights = layer(h, return_attention_scores=True)
    np.testing.assert_allclose(results[0][0], to_numpy(out)[0], atol=1e-6)
    np.testing.assert_allclose(results[0][1], to_numpy(weights)[0], atol=1e-6)


def test_padding_invariance_mask_from_token_ids():
    vocab, length = 20, 5
    ids = np.array([[3, 7, 2, 9, 4]])
    embedding = keras.layers.Embedding(vocab, D, mask_zero=True)
    attention = MaskedSelfAttention(mask="fw+sd")
    inputs = keras.Input(shape=(None,), dtype="int32")
    model = keras.Model(inputs, attention(embedding(inputs)))
    randomize_weights(model, seed=2)
    outs = []
    for extra in (5, 50):
        padded = _pad(ids, extra).astype("int32")
        out = to_numpy(model(padded))
        assert np.all(out[0, length:] == 0)
        outs.append(out[0, :length])
    np.testing.assert_allclose(outs[0], outs[1], atol=1e-6)
    np.testing.assert_allclose(outs[0], to_numpy(model(ids.astype("int32")))[0], atol=1e-6)


# --- fully blocked rows, in every dtype policy ---

FULLY_BLOCKED_CASES = {
    # mask -> (lengths of the batch's sequences, rows expected to be zero)
    "bw": ([5, 7, 0], [(0, 0), (1, 0)]),  # 1st token under Backward
    "fw": ([5, 7, 0], [(0, 4), (1, 6)]),  # last token under Forward
    "fa2": ([1, 7, 0], [(0, 0)]),  # a one-token sentence under Faraway
}


@pytest.mark.parametrize(
    "dtype_policy", ["float32", "mixed_float16", "mixed_bfloat16"], indirect=True
)
@pytest.mark.parametrize("compatibility", ["additive", "multi_dimensional", "dot"])
@pytest.mark.parametrize("mask", sorted(FULLY_BLOCKED_CASES))
def test_fully_blocked_rows_are_zero_with_finite_gradients(dtype_policy, compatibility, mask):
    lengths, zero_rows = FULLY_BLOCKED_CASES[mask]
    n = 7
    h = random_inputs(batch=len(lengths), n=n, seed=11)
    padding = np.arange(n)[None] < np.array(lengths)[:, None]

    def make():
        return MaskedSelfAttention(mask=mask, compatibility=compatibility)

    # float32 results with the same weights, for comparison.
    keras.mixed_precision.set_global_policy("float32")
    ref_layer = make()
    ref_layer(h)
    randomize_weights(ref_layer, seed=4)
    ref_out, ref_weights = (
        to_numpy(x) for x in ref_layer(h, mask=padding, return_attention_scores=True)
    )
    keras.mixed_precision.set_global_policy(dtype_policy)

    layer = make()
    layer(h)
    layer.set_weights(ref_layer.get_weights())
    out, weights = layer(h, mask=padding, return_attention_scores=True)
    assert weights.dtype == "float32"
    if dtype_policy != "float32":
        assert out.dtype == keras.mixed_precision.global_policy().compute_dtype
    out = to_numpy(out).astype("float32")
    weights = to_numpy(weights)
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(weights))
    for b, q in zero_rows:
        assert np.all(out[b, q] == 0), (b, q)
        assert np.all(weights[b, q] == 0), (b, q)
    # The all-padding sequence (last in the batch): everything zero.
    assert np.all(out[-1] == 0) and np.all(weights[-1] == 0)
    # Padding positions are zero rows too.
    assert np.all(out[~padding] == 0)
    # Other rows sum to one.
    sums = weights.sum(axis=2)
    if sums.ndim == 3:
        sums = sums[..., 0]
    for b in range(len(lengths)):
        for q in range(lengths[b]):
            expected = 0.0 if (b, q) in zero_rows else 1.0
            assert abs(sums[b, q] - expected) < 1e-3, (b, q, sums[b, q])

    tol = 1e-5 if dtype_policy == "float32" else 5e-2
    np.testing.assert_allclose(out, ref_out, atol=tol, rtol=tol)
    np.testing.assert_allclose(weights, ref_weights, atol=tol, rtol=tol)

    input_grads, weight_grads = gradients(layer, h, mask=padding)
    assert all(g is not None for g in weight_grads)
    for g in input_grads + weight_grads:
        assert np.all(np.isfinite(g))
    # Nothing depends on the all-padding sequence: its gradient is exactly 0.
    assert np.all(input_grads[0][-1] == 0)
    if mask == "fa2":
        # Nor on the lone token of the one-token sentence.
        assert np.all(input_grads[0][0] == 0)


@pytest.mark.parametrize("compatibility", ["additive", "multi_dimensional"])
def test_all_padding_batch_has_zero_weight_gradients(compatibility):
    h = random_inputs(batch=2, n=4)
    padding = np.zeros((2, 4), dtype=bool)
    layer = built_layer(h, mask="bw+sd", compatibility=compatibility)
    out = to_numpy(layer(h, mask=padding))
    assert np.all(out == 0)
    _, weight_grads = gradients(layer, h, mask=padding)
    for g in weight_grads:
        assert g is not None and np.all(g == 0)


def test_dropout_only_in_training():
    h = random_inputs(batch=2, n=6)
    layer = built_layer(h, mask="fa2", dropout=0.5)
    a = to_numpy(layer(h, training=False))
    b = to_numpy(layer(h))
    np.testing.assert_array_equal(a, b)
    c = to_numpy(layer(h, training=True))
    assert not np.allclose(a, c)


def test_symbolic_dynamic_length_in_tf_function():
    # The masks are computed in-graph from the (dynamic) length.
    layer = MaskedSelfAttention(mask="bw+sd")
    fn = tf.function(
        lambda x, m: layer(x, mask=m),
        input_signature=[
            tf.TensorSpec((None, None, D), tf.float32),
            tf.TensorSpec((None, None), tf.bool),
        ],
    )
    for n in (3, 8):
        h = random_inputs(batch=2, n=n)
        m = np.ones((2, n), bool)
        np.testing.assert_allclose(to_numpy(fn(h, m)), to_numpy(layer(h, mask=m)), atol=1e-6)


def test_compatibility_dropout_keeps_the_values_undropped():
    """The released code drops the h feeding the compatibility only: in
    training the outputs are still the returned weights times the undropped h."""
    h = np.random.default_rng(5).normal(size=(2, 6, 8)).astype("float32")
    layer = MaskedSelfAttention(mask="bw", compatibility_dropout=0.5)
    layer(h)
    s, p = layer(h, return_attention_scores=True, training=True)
    np.testing.assert_allclose(to_numpy(s), np.einsum("bqk,bkd->bqd", to_numpy(p), h), atol=1e-5)
    s_eval = to_numpy(layer(h, training=False))
    assert not np.allclose(to_numpy(s), s_eval)  # the weights did change
    s2, p2 = layer(h, return_attention_scores=True, training=False)
    np.testing.assert_allclose(to_numpy(s2), np.einsum("bqk,bkd->bqd", to_numpy(p2), h), atol=1e-5)


@pytest.mark.parametrize("compatibility", ["additive", "multi_dimensional", "dot"])
@pytest.mark.parametrize("spec", ["fa1", "fa2", "fa3+sd", "fa2+d"])
def test_banded_equals_dense(compatibility, spec):
    """A Faraway window computed over its band only (O(n * m)) gives the dense
    path's outputs, weights and gradients."""
    import tensorflow as tf

    rng = np.random.default_rng(11)
    h = rng.normal(size=(3, 9, 8)).astype("float32")
    mask = np.arange(9)[None] < np.array([[9], [4], [1]])
    dense = MaskedSelfAttention(spec, compatibility=compatibility, implementation="dense")
    banded = MaskedSelfAttention(spec, compatibility=compatibility)
    dense(h)
    banded(h)
    randomize_weights(dense, seed=3)
    banded.set_weights(dense.get_weights())
    assert banded._band is not None and dense._band is None
    for got, want in zip(banded(h, mask=mask, return_attention_scores=True),
                         dense(h, mask=mask, return_attention_scores=True)):
        np.testing.assert_allclose(to_numpy(got), to_numpy(want), atol=1e-6)
    grads = []
    for layer in (dense, banded):
        x = tf.constant(h)
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(layer(x, mask=mask) * tf.sin(tf.range(8, dtype=tf.float32)))
        grads.append(tape.gradient(loss, [x] + layer.trainable_weights))
    for got, want in zip(*grads):
        np.testing.assert_allclose(to_numpy(got), to_numpy(want), atol=1e-5)


def test_banded_needs_a_radius_and_keeps_its_config():
    with pytest.raises(ValueError, match="finite radius"):
        MaskedSelfAttention("bw+sd", implementation="banded")
    with pytest.raises(ValueError, match="implementation"):
        MaskedSelfAttention("fa2", implementation="sparse")
    layer = MaskedSelfAttention("fa2", implementation="banded")
    assert MaskedSelfAttention.from_config(layer.get_config()).implementation == "banded"
    assert MaskedSelfAttention("bw")._band is None  # unbounded: dense


@pytest.mark.parametrize("dtype_policy", ["mixed_float16", "mixed_bfloat16"], indirect=True)
def test_banded_mixed_precision_and_empty_rows(dtype_policy):
    h = np.random.default_rng(12).normal(size=(2, 6, 8)).astype("float32")
    mask = np.array([[1, 1, 1, 1, 0, 0], [0, 0, 0, 0, 0, 0]], bool)
    layer = MaskedSelfAttention("fa2")
    out, weights = layer(h, mask=mask, return_attention_scores=True)
    assert weights.dtype == "float32"
    out = to_numpy(out).astype("float32")
    assert np.isfinite(out).all() and np.all(out[1] == 0) and np.all(to_numpy(weights)[1] == 0)


@pytest.mark.parametrize("spec", ["fw+sd", "bw", None])
def test_dense_one_dimensional_attention_builds_no_batch_by_pair_mask(spec):
    """The 1-D and dot compatibilities mask with additive (n, n) and (b, 1, n)
    biases: the traced graph holds no boolean tensor of shape (b, n, n)."""
    b, n, d = 2, 6, 4
    layer = MaskedSelfAttention(mask=spec)
    fn = tf.function(lambda h, m: layer(h, mask=m))
    graph = fn.get_concrete_function(
        tf.TensorSpec((b, n, d), tf.float32), tf.TensorSpec((b, n), tf.bool)).graph
    pairs = [op.name for op in graph.get_operations() for out in op.outputs
             if out.dtype == tf.bool and out.shape.rank == 3 and out.shape[1:] == (n, n)]
    assert not pairs, f"a (b, n, n) mask is built by {pairs}"
