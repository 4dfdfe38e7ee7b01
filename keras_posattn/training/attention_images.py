"""Attention heat-maps as images (rendering only).

This module renders the self-attention weights of the library's models (one
``(n_queries, n_keys)`` matrix per masked attention branch, e.g. MPSAN's
``fa2``, ``fa3``, ``bw_sd`` and ``fw_sd``) and 1-D weights over tokens (e.g.
the pooling step's per-feature weights averaged over features) as RGB images:
``render_maps(model.attention_maps(ids), tokens)`` gives ``{tag: image}``
with the tags ``attention/<branch>/example_<k>`` and
``pooling/<name>/example_<k>``. The TensorBoard callback that logs them
during training is ``keras_posattn.training.callbacks.AttentionImages``;
``keras-posattn attention`` writes them as PNG files
(``keras_posattn.training.attention_png``).

Rendering uses Pillow only (no matplotlib).

In each heat-map, rows are query positions (y axis, "query") and columns are
key positions (x axis, "key"); the colour scale runs from 0 to the largest
weight shown.  Rows that are all zero (padding or fully-blocked queries)
simply appear in the lowest colour.
"""

from __future__ import annotations

from functools import lru_cache

import keras
import numpy as np
from PIL import Image, ImageDraw, ImageFont

__all__ = [
    "CARD_STYLE",
    "CARD_WIDTH",
    "render_attention_heatmap",
    "render_maps",
    "render_weights_over_tokens",
]

#: Tokens longer than this are truncated (with a trailing "~") in labels.
MAX_LABEL_CHARS = 12

#: How TensorBoard's images are drawn: a Time Series card shows an image
#: scaled to the card (about 400 pixels wide), so the maps there show their
#: first 16 tokens with 12-pixel labels, and stay within CARD_WIDTH pixels.
#: ``keras-posattn attention`` (PNG files) draws every token.
CARD_STYLE = {"max_tokens": 16, "font_size": 12, "size": 224}
CARD_WIDTH = 440

_BG = (255, 255, 255)
_FG = (20, 20, 20)
_GRID = (200, 200, 200)
_PAD = 8

# Viridis colour map sampled at 9 equally spaced points (0 .. 1).
_VIRIDIS = np.array(
    [
        (68, 1, 84),
        (71, 45, 123),
        (59, 82, 139),
        (44, 114, 142),
        (33, 145, 140),
        (40, 174, 128),
        (94, 201, 98),
        (173, 220, 48),
        (253, 231, 37),
    ],
    dtype=np.float64,
)


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------
@lru_cache(maxsize=None)
def _font(size: int):
    try:
        return ImageFont.load_default(size=size)
    except Exception:  # Pillow built without FreeType: bitmap font.
        return ImageFont.load_default()


def _text_w(font, text: str) -> int:
    if not text:
        return 0
    left, _, right, _ = font.getbbox(text)
    return int(np.ceil(right - min(left, 0)))


def _text_h(font) -> int:
    _, top, _, bottom = font.getbbox("Ag|")
    return int(np.ceil(bottom))


def _colormap(values: np.ndarray) -> np.ndarray:
    """Map values in [0, 1] to uint8 RGB with (piece-wise linear) viridis."""
    v = np.clip(np.nan_to_num(values, nan=0.0), 0.0, 1.0) * (len(_VIRIDIS) - 1)
    lo = np.floor(v).astype(int)
    hi = np.minimum(lo + 1, len(_VIRIDIS) - 1)
    frac = (v - lo)[..., None]
    rgb = _VIRIDIS[lo] * (1.0 - frac) + _VIRIDIS[hi] * frac
    return np.round(rgb).astype(np.uint8)


def _truncate(label: str, max_chars: int = MAX_LABEL_CHARS) -> str:
    label = str(label).replace("\n", " ").replace("\t", " ")
    if len(label) > max_chars:
        return label[: max_chars - 1] + "~"
    return label


def _fit_text(font, text: str, max_w: int) -> str:
    """Truncate ``text`` further (pixel-wise) until it fits in ``max_w``."""
    if _text_w(font, text) <= max_w:
        return text
    while len(text) > 1 and _text_w(font, text[:-1] + "~") > max_w:
        text = text[:-1]
    return text[:-1] + "~" if len(text) > 1 else text


def _labels(tokens, n: int) -> list[str]:
    if tokens is None:
        return [str(i) for i in range(n)]
    tokens = [_truncate(t) for t in list(tokens)[:n]]
    if not tokens:
        raise ValueError("`tokens` must contain at least one token.")
    return tokens


def _cell_and_font(m: int, target: int) -> tuple[int, int]:
    cell = int(np.clip(target // max(m, 1), 14, 40))
    font_size = int(np.clip(cell - 3, 11, 14))
    return cell, font_size


def _label_width(font) -> int:
    # Fixed width for a given font so that the image size depends on the
    # number of tokens only, not on their text.
    return _text_w(font, "o" * MAX_LABEL_CHARS) + 4


def _rotated_text(font, text: str, box_w: int, box_h: int, align_right: bool):
    """Return text rotated 90 degrees counter-clockwise (reads bottom-up).

    The text is laid out horizontally in a ``box_w`` x ``box_h`` box and
    then rotated, giving a ``box_h`` x ``box_w`` (width x height) image.
    ``align_right`` puts the end of the text at the top after rotation.
    """
    img = Image.new("RGB", (box_w, box_h), _BG)
    d = ImageDraw.Draw(img)
    tw = _text_w(font, text)
    th = _text_h(font)
    x = box_w - tw - 2 if align_right else max((box_w - tw) // 2, 0)
    y = max((box_h - th) // 2, 0)
    d.text((x, y), text, fill=_FG, font=font)
    return img.rotate(90, expand=True)


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 100 or abs(v) < 0.01:
        return f"{v:.1e}"
    return f"{v:.2f}"


def _draw_title(draw, font, title, x0, width, y):
    if title:
        text = _fit_text(font, str(title), width)
        tw = _text_w(font, text)
        draw.text((x0 + max((width - tw) // 2, 0), y), text, fill=_FG, font=font)


def _draw_colorbar(img, draw, font, x, y, w, h, vmax):
    grad = np.linspace(1.0, 0.0, h)[:, None].repeat(w, axis=1)
    img.paste(Image.fromarray(_colormap(grad), "RGB"), (x, y))
    draw.rectangle([x - 1, y - 1, x + w, y + h], outline=_FG)
    th = _text_h(font)
    for frac in (1.0, 0.5, 0.0):
        ty = y + int(round((1.0 - frac) * (h - 1)))
        draw.line([x + w, ty, x + w + 3, ty], fill=_FG)
        label_y = int(np.clip(ty - th // 2, y - th // 2, y + h - th // 2))
        draw.text((x + w + 5, label_y), _fmt(frac * vmax), fill=_FG, font=font)


# --------------------------------------------------------------------------
# public renderers
# --------------------------------------------------------------------------
def _window(labels, max_tokens, title):
    """The first ``max_tokens`` labels, and the title saying so."""
    if max_tokens is None or len(labels) <= max_tokens:
        return labels, title
    note = f"first {int(max_tokens)} of {len(labels)} tokens"
    return labels[: int(max_tokens)], f"{title} ({note})" if title else note


def _layout(m, size, font_size):
    cell, fs = _cell_and_font(m, size)
    if font_size is not None:
        fs = int(font_size)
        cell = max(cell, fs + 2)
    return cell, fs


def render_attention_heatmap(weights, tokens, title=None, row_labels=None, max_tokens=None,
                             size=560, font_size=None) -> np.ndarray:
    """Render an attention matrix as a labelled heat-map.

    Args:
      weights: array-like ``(n_queries, n_keys)``; rows are query positions,
        columns key positions.
      tokens: the real tokens of the sentence (sequence of str).  The matrix
        is cropped to its first ``len(tokens)`` rows and columns.  ``None``
        shows all positions labelled by index.
      title: optional title drawn above the heat-map.
      row_labels: labels of the rows when they are not the tokens (CSPAN's
        learned queries: ``["q1", "q2", ...]``); only the columns are then
        cropped to the tokens.
      max_tokens: show only the first ``max_tokens`` tokens (and rows); the
        title says so. ``None``: all.
      size: the heat-map's target side in pixels (cells of 14 to 40 pixels).
      font_size: the labels' font size in pixels (default: from the cell).

    Returns:
      ``uint8`` array ``(H, W, 3)``.  Its size depends only on the number of
      rows and tokens shown (and is the same with or without a title).
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 2:
        raise ValueError(f"`weights` must be 2-D (n_queries, n_keys), got {w.shape}.")
    w = np.nan_to_num(w, nan=0.0, posinf=0.0, neginf=0.0)
    col_labels = _labels(tokens, w.shape[1] if row_labels is not None else max(w.shape))
    col_labels, title = _window(col_labels, max_tokens, title)
    labels = col_labels if row_labels is None else [_truncate(r) for r in row_labels]
    if max_tokens is not None:
        labels = labels[: int(max_tokens)]
    n_rows, n_cols = len(labels), len(col_labels)
    w = w[:n_rows, :n_cols]
    rows, cols = w.shape
    m = max(n_rows, n_cols)
    cell, fs = _layout(m, size, font_size)
    font = _font(fs)
    small = _font(max(fs - 1, 10))
    th = _text_h(font)
    label_w = _label_width(font)

    vmax = float(w.max()) if w.size and w.max() > 0 else 1.0
    vmin = min(float(w.min()) if w.size else 0.0, 0.0)
    norm = (w - vmin) / (vmax - vmin)

    axis_band = th + 8  # for the rotated "query" / the "key" axis title
    title_h = th + 12
    cbar_w = 14
    cbar_labels = _text_w(small, "0.00e-00") + 8

    hm_x = _PAD + axis_band + label_w + 4
    hm_y = _PAD + title_h
    hm_w, hm_h = n_cols * cell, n_rows * cell
    width = hm_x + hm_w + 14 + cbar_w + cbar_labels + _PAD
    height = hm_y + hm_h + 4 + label_w + axis_band + _PAD

    img = Image.new("RGB", (width, height), _BG)
    draw = ImageDraw.Draw(img)

    # heat-map cells
    cells = np.zeros((n_rows, n_cols), dtype=np.float64)
    cells[:rows, :cols] = norm
    block = _colormap(cells).repeat(cell, axis=0).repeat(cell, axis=1)
    img.paste(Image.fromarray(block, "RGB"), (hm_x, hm_y))
    if cell >= 18:  # thin grid lines between cells for readability
        for i in range(1, n_cols):
            draw.line([hm_x + i * cell, hm_y, hm_x + i * cell, hm_y + hm_h - 1], fill=_BG)
        for i in range(1, n_rows):
            draw.line([hm_x, hm_y + i * cell, hm_x + hm_w - 1, hm_y + i * cell], fill=_BG)
    draw.rectangle([hm_x - 1, hm_y - 1, hm_x + hm_w, hm_y + hm_h], outline=_FG)

    # y tick labels (queries), right-aligned next to the heat-map
    for i, lab in enumerate(labels):
        text = _fit_text(font, lab, label_w - 2)
        tw = _text_w(font, text)
        y = hm_y + i * cell + (cell - th) // 2
        draw.text((hm_x - 4 - tw, y), text, fill=_FG, font=font)

    # x tick labels (keys), rotated, under the heat-map
    used = 0  # widest label actually drawn, to put the axis titles close
    for j, lab in enumerate(col_labels):
        text = _fit_text(font, lab, label_w - 2)
        used = max(used, _text_w(font, text))
        rot = _rotated_text(font, text, label_w, cell, align_right=True)
        img.paste(rot, (hm_x + j * cell, hm_y + hm_h + 4))
    used = min(used + 6, label_w)

    # axis titles
    key_w = _text_w(font, "key")
    draw.text((hm_x + (hm_w - key_w) // 2, hm_y + hm_h + 4 + used + 3),
              "key", fill=_FG, font=font)
    qbox_w = max(_text_w(font, "query") + 4, 1)
    qimg = _rotated_text(font, "query", qbox_w, axis_band, align_right=False)
    img.paste(qimg, (hm_x - 4 - used - axis_band, hm_y + max((hm_h - qbox_w) // 2, 0)))

    # colour bar
    cb_x = hm_x + hm_w + 14
    _draw_colorbar(img, draw, small, cb_x, hm_y, cbar_w, hm_h, vmax)

    _draw_title(draw, font, title, _PAD, width - 2 * _PAD, _PAD)
    return np.asarray(img, dtype=np.uint8).copy()


def render_weights_over_tokens(weights, tokens, title=None, max_tokens=None, size=720,
                               font_size=None) -> np.ndarray:
    """Render one weight per token as a bar strip plus a heat row.

    Args:
      weights: array-like ``(n,)`` (e.g. pooling weights averaged over
        features).  Cropped to ``len(tokens)``.
      tokens: the real tokens (sequence of str), or ``None`` for indices.
      title: optional title.
      max_tokens, size, font_size: as for ``render_attention_heatmap``.

    Returns:
      ``uint8`` array ``(H, W, 3)`` whose size depends only on the number
      of tokens shown.
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1:
        raise ValueError(f"`weights` must be 1-D (n,), got {w.shape}.")
    w = np.nan_to_num(w, nan=0.0, posinf=0.0, neginf=0.0)
    labels, title = _window(_labels(tokens, w.shape[0]), max_tokens, title)
    m = len(labels)
    vals = np.zeros(m)
    vals[: min(m, w.shape[0])] = w[:m]
    cell, fs = _layout(m, size, font_size)
    font = _font(fs)
    small = _font(max(fs - 1, 10))
    th = _text_h(font)
    label_w = _label_width(font)

    vmax = float(vals.max()) if vals.max() > 0 else 1.0
    norm = np.clip(vals / vmax, 0.0, 1.0)

    title_h = th + 12
    axis_w = _text_w(small, "0.00e-00") + 8
    bar_h = 90
    row_h = cell

    x0 = _PAD + axis_w
    y_bar = _PAD + title_h
    y_row = y_bar + bar_h + 4
    strip_w = m * cell
    width = x0 + strip_w + _PAD + 4
    height = y_row + row_h + 4 + label_w + _PAD

    img = Image.new("RGB", (width, height), _BG)
    draw = ImageDraw.Draw(img)
    colors = _colormap(norm)

    # bars
    draw.line([x0 - 1, y_bar, x0 - 1, y_bar + bar_h], fill=_FG)
    draw.line([x0 - 1, y_bar + bar_h, x0 + strip_w, y_bar + bar_h], fill=_FG)
    for frac in (1.0, 0.5, 0.0):
        ty = y_bar + int(round((1.0 - frac) * bar_h))
        draw.line([x0 - 4, ty, x0 - 1, ty], fill=_FG)
        if frac > 0:
            draw.line([x0, ty, x0 + strip_w, ty], fill=_GRID)
        text = _fmt(frac * vmax)
        draw.text((x0 - 6 - _text_w(small, text), ty - th // 2), text, fill=_FG, font=small)
    gap = 2 if cell >= 10 else 1
    for j in range(m):
        h = int(round(norm[j] * bar_h))
        if h > 0:
            draw.rectangle(
                [x0 + j * cell + gap, y_bar + bar_h - h, x0 + (j + 1) * cell - 1 - gap, y_bar + bar_h - 1],
                fill=tuple(int(c) for c in colors[j]),
            )

    # heat row
    row = colors[None, :, :].repeat(row_h, axis=0).repeat(cell, axis=1)
    img.paste(Image.fromarray(np.ascontiguousarray(row), "RGB"), (x0, y_row))
    draw.rectangle([x0 - 1, y_row - 1, x0 + strip_w, y_row + row_h], outline=_FG)

    # token labels
    for j, lab in enumerate(labels):
        text = _fit_text(font, lab, label_w - 2)
        rot = _rotated_text(font, text, label_w, cell, align_right=True)
        img.paste(rot, (x0 + j * cell, y_row + row_h + 4))

    _draw_title(draw, font, title, _PAD, width - 2 * _PAD, _PAD)
    return np.asarray(img, dtype=np.uint8).copy()


def render_maps(maps, tokens, max_examples=None, **style) -> dict[str, np.ndarray]:
    """Render a model's attention maps (``model.attention_maps``) as images.

    Args:
      maps: ``{name: array}``; each value is either ``(batch, n_queries,
        n_keys)`` attention weights (rendered as ``attention/<name>/example_<k>``;
        when the rows are not the tokens - a name ending in ``queries``, or
        fewer/more rows than columns - rows are labelled q1, q2...) or
        ``(batch, n)`` 1-D weights over tokens, e.g. pooling weights averaged
        over features (``pooling/<name>/example_<k>``).
      tokens: list (one per example) of lists of the real token strings (one
        label per sentence for sentence-level maps).
      max_examples: at most this many examples are rendered (default: all).
      **style: ``max_tokens``, ``font_size`` and ``size`` for every image
        (``CARD_STYLE``: legible at a TensorBoard card's size).

    Returns:
      ``{tag: uint8 image (H, W, 3)}``.
    """
    k = len(tokens) if max_examples is None else min(int(max_examples), len(tokens))
    images = {}
    for name, arr in maps.items():
        arr = np.asarray(keras.ops.convert_to_numpy(arr))
        for i in range(min(k, arr.shape[0])):
            toks = list(tokens[i]) or None
            if arr.ndim == 3:
                rows = None
                if name.endswith("queries") or arr.shape[1] != arr.shape[2]:
                    # Rows are not tokens (CSPAN's learned queries).
                    rows = [f"q{r + 1}" for r in range(arr.shape[1])]
                images[f"attention/{name}/example_{i}"] = render_attention_heatmap(
                    arr[i], toks, title=f"{name} - example {i}", row_labels=rows, **style
                )
            elif arr.ndim == 2:
                images[f"pooling/{name}/example_{i}"] = render_weights_over_tokens(
                    arr[i], toks, title=f"{name} - example {i}", **style
                )
            else:
                raise ValueError(
                    f"attention map {name!r} must be (batch, n, n) or (batch, n), "
                    f"got shape {arr.shape}."
                )
    return images
