"""Tests for keras_posattn.training.attention_images (rendering) and its
TensorBoard callback, keras_posattn.training.callbacks.AttentionImages."""

import glob
import os

import keras
import numpy as np
import pytest
from tensorboard.backend.event_processing import event_accumulator

from keras_posattn.training.attention_images import (
    CARD_STYLE,
    CARD_WIDTH,
    render_attention_heatmap,
    render_maps,
    render_weights_over_tokens,
)
from keras_posattn.training.callbacks import AttentionImages

TOKENS = ["the", "movie", "was", "really", "good"]


def _softmax_rows(n, seed=0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, n)) * 2.0
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# --------------------------------------------------------------------------
# renderers
# --------------------------------------------------------------------------
def test_heatmap_shape_dtype_and_deterministic():
    w = _softmax_rows(8)
    a = render_attention_heatmap(w, TOKENS, title="fa2")
    b = render_attention_heatmap(w, TOKENS, title="fa2")
    assert a.dtype == np.uint8
    assert a.ndim == 3 and a.shape[2] == 3
    assert a.shape[0] > 50 and a.shape[1] > 50
    np.testing.assert_array_equal(a, b)


def test_heatmap_size_depends_only_on_number_of_tokens():
    other = ["a", "extraordinarilylongtoken", "b", "c", "d"]
    a = render_attention_heatmap(_softmax_rows(8, 1), TOKENS, title="x")
    b = render_attention_heatmap(_softmax_rows(8, 2), other)
    assert a.shape == b.shape
    c = render_attention_heatmap(_softmax_rows(8), TOKENS[:3])
    assert c.shape != a.shape


def test_heatmap_depends_on_weights():
    img = render_attention_heatmap(_softmax_rows(5, 0), TOKENS)
    assert img.min() != img.max()
    assert len(np.unique(img.reshape(-1, 3), axis=0)) > 5
    img2 = render_attention_heatmap(_softmax_rows(5, 1), TOKENS)
    assert img.shape == img2.shape
    assert not np.array_equal(img, img2)
    # weights beyond the real tokens are cropped away
    w = _softmax_rows(5, 0)
    padded = np.zeros((9, 9))
    padded[:5, :5] = w
    padded2 = padded.copy()
    padded2[7, :] = 1.0 / 9  # padding row, not shown
    np.testing.assert_array_equal(
        render_attention_heatmap(padded, TOKENS), render_attention_heatmap(padded2, TOKENS)
    )


def test_heatmap_edge_cases():
    one = render_attention_heatmap(np.ones((1, 1)), ["hi"])
    assert one.dtype == np.uint8 and one.shape[2] == 3
    long_tokens = ["supercalifragilisticexpialidocious", "x" * 40, "ok"]
    zeros = np.zeros((3, 3))  # all rows blocked
    img = render_attention_heatmap(zeros, long_tokens, title="a" * 200)
    assert img.shape == render_attention_heatmap(zeros, ["a", "b", "c"]).shape
    # 40 tokens still renders at a reasonable size
    big = render_attention_heatmap(_softmax_rows(40), [f"tok{i}" for i in range(40)])
    assert big.shape[0] < 1200 and big.shape[1] < 1200
    with pytest.raises(ValueError):
        render_attention_heatmap(np.ones(3), ["a"])


def test_weights_over_tokens():
    w = np.array([0.1, 0.5, 0.2, 0.15, 0.05, 0.0, 0.0])
    a = render_weights_over_tokens(w, TOKENS, title="pool")
    assert a.dtype == np.uint8 and a.ndim == 3 and a.shape[2] == 3
    np.testing.assert_array_equal(a, render_weights_over_tokens(w, TOKENS, title="pool"))
    b = render_weights_over_tokens(w[::-1].copy(), TOKENS, title="pool")
    assert a.shape == b.shape and not np.array_equal(a, b)
    assert render_weights_over_tokens([1.0], ["x" * 30]).shape[2] == 3
    with pytest.raises(ValueError):
        render_weights_over_tokens(np.ones((2, 2)), ["a"])


# --------------------------------------------------------------------------
# callback
# --------------------------------------------------------------------------
N = 6
BRANCHES = ["fa2", "fa3", "bw_sd", "fw_sd"]
EXAMPLE_TOKENS = [["a", "good", "film"], ["bad", "plot", "very", "bad"], ["meh"]]


def _fake_attention_fn(calls):
    def fn(token_ids):
        token_ids = np.asarray(token_ids)
        calls.append(token_ids.shape)
        b = token_ids.shape[0]
        out = {}
        for k, name in enumerate(BRANCHES):
            w = np.stack([_softmax_rows(N, seed=10 * k + i) for i in range(b)])
            w[:, 0, :] = 0.0  # a fully-blocked / padding row
            out[name] = w.astype(np.float32)
        out["pool"] = np.full((b, N), 1.0 / N, dtype=np.float32)
        return out

    return fn


def _read_image_events(directory):
    """Return {tag: [steps]} for image summaries under ``directory``."""
    assert glob.glob(os.path.join(directory, "events.out.tfevents.*"))
    acc = event_accumulator.EventAccumulator(
        directory, size_guidance={"images": 0, "tensors": 0}
    )
    acc.Reload()
    tags = acc.Tags()
    found = {}
    for tag in tags.get("images", []):
        found[tag] = sorted(e.step for e in acc.Images(tag))
    for tag in tags.get("tensors", []):
        events = acc.Tensors(tag)
        found[tag] = sorted(e.step for e in events)
        # TF2 image summaries: string tensor [width, height, png...]
        t = events[0].tensor_proto
        assert t.dtype == 7  # DT_STRING
        assert t.string_val[2].startswith(b"\x89PNG")
    return found


def _expected_tags(n_examples):
    tags = [f"attention/{b}/example_{k}" for b in BRANCHES for k in range(n_examples)]
    tags += [f"pooling/pool/example_{k}" for k in range(n_examples)]
    return tags


def _summary_tags(n_examples):
    return [f"maps/{tag}" for tag in _expected_tags(n_examples)]


def test_callback_write(tmp_path):
    calls = []
    ids = np.random.default_rng(0).integers(1, 50, size=(3, N))
    cb = AttentionImages(
        str(tmp_path), _fake_attention_fn(calls), ids, EXAMPLE_TOKENS, max_examples=2
    )
    images = cb.write(step=0)
    cb.close()
    assert calls == [(2, N)]
    assert sorted(images) == sorted(_expected_tags(2))
    found = _read_image_events(os.path.join(str(tmp_path), "attention"))
    for tag in _summary_tags(2):
        assert found[tag] == [0], tag
    assert "maps/attention/fa2/example_2" not in found


def test_callback_in_fit(tmp_path):
    calls = []
    ids = np.random.default_rng(1).integers(1, 50, size=(3, N))
    cb = AttentionImages(
        str(tmp_path), _fake_attention_fn(calls), ids, EXAMPLE_TOKENS, subdir="att"
    )
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x = np.random.default_rng(0).normal(size=(16, 4)).astype("float32")
    y = np.zeros((16, 1), dtype="float32")
    model.fit(x, y, epochs=2, batch_size=8, verbose=0, callbacks=[cb])
    cb.close()
    assert len(calls) == 2  # once per epoch, not again at train end
    found = _read_image_events(os.path.join(str(tmp_path), "att"))
    for tag in _summary_tags(3):
        assert found[tag] == [0, 1], tag


def test_callback_every_n_epochs_writes_last_at_train_end(tmp_path):
    calls = []
    ids = np.ones((1, N), dtype=np.int32)
    cb = AttentionImages(
        str(tmp_path), _fake_attention_fn(calls), ids, EXAMPLE_TOKENS[:1], every_n_epochs=2
    )
    # drive the hooks directly: epochs 0, 1, 2 -> written at 1, then 2 at end
    for epoch in range(3):
        cb.on_epoch_end(epoch)
    cb.on_train_end()
    cb.close()
    found = _read_image_events(os.path.join(str(tmp_path), "attention"))
    assert found["maps/attention/fw_sd/example_0"] == [1, 2]
    assert found["maps/pooling/pool/example_0"] == [1, 2]


def test_heatmap_with_query_rows():
    """CSPAN's learned queries: rows q1..qm, columns the tokens (cropped)."""
    from keras_posattn.training.attention_images import render_attention_heatmap

    weights = np.random.default_rng(0).random((4, 9))
    image = render_attention_heatmap(weights, ["a", "b", "c"], row_labels=["q1", "q2", "q3", "q4"])
    square = render_attention_heatmap(np.random.default_rng(0).random((4, 4)), ["a", "b", "c", "d"])
    assert image.ndim == 3 and image.shape[2] == 3
    # 4 rows x 3 columns: narrower than a 4 x 4 map of the same cell size.
    assert image.shape[1] < square.shape[1] and image.shape[0] == square.shape[0]


def test_tensorboard_images_of_long_texts_fit_a_card_and_say_what_they_show():
    """A Time Series card scales an image to its width (about 400 px): the
    callback's images of a 200-token text stay within CARD_WIDTH with their
    first CARD_STYLE["max_tokens"] tokens (the title says so), while the PNG
    rendering still draws every token."""
    n = 200
    tokens = [f"token{i}" for i in range(n)]
    rng = np.random.default_rng(3)
    maps = {"fa2": rng.random((1, n, n)), "pool": rng.random((1, n)),
            "queries": rng.random((1, 8, n))}
    calls = []
    cb = AttentionImages("unused", lambda ids: (calls.append(ids.shape), maps)[1],
                         np.ones((1, n), dtype=np.int32), [tokens])
    images = cb.render()
    assert calls == [(1, n)]
    assert sorted(images) == ["attention/fa2/example_0", "attention/queries/example_0",
                              "pooling/pool/example_0"]
    for tag, image in images.items():
        assert image.shape[1] <= CARD_WIDTH, (tag, image.shape)
        assert image.shape[0] <= CARD_WIDTH, (tag, image.shape)
    # the window is the first max_tokens tokens: the same image as rendering them alone
    k = CARD_STYLE["max_tokens"]
    alone = render_attention_heatmap(maps["fa2"][0][:k, :k], tokens[:k],
                                     title=f"fa2 - example 0 (first {k} of {n} tokens)",
                                     font_size=CARD_STYLE["font_size"], size=CARD_STYLE["size"])
    np.testing.assert_array_equal(images["attention/fa2/example_0"], alone)
    untitled = render_attention_heatmap(maps["fa2"][0], tokens, **CARD_STYLE)
    assert not np.array_equal(untitled, render_attention_heatmap(
        maps["fa2"][0][:k, :k], tokens[:k], **CARD_STYLE))  # the note is drawn
    full = render_maps(maps, [tokens])
    assert full["attention/fa2/example_0"].shape[1] > 5 * CARD_WIDTH  # every token
