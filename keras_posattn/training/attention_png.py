"""``keras-posattn attention``: attention heat-maps as PNG files.

For people who do not run TensorBoard: the same images as the training logs'
IMAGES tab (``attention_images.render_maps``), for any text, from a saved
classifier (``.keras`` or a training run folder) or from an export (its
``attention`` signature, read by ``export.ExportedModel``; TensorFlow only).
"""

import re
from pathlib import Path

from PIL import Image


def maps_from_classifier(source, texts):
    """``(maps, tokens)`` from a ``.keras`` file or run folder."""
    from keras import ops

    from keras_posattn.export import load_classifier

    classifier = load_classifier(source)
    pre, model = classifier.preprocessor, classifier.model
    ids = ops.convert_to_numpy(pre(list(texts)))
    return model.attention_maps(ids), [pre.display_tokens(row) for row in ids]


def write_attention_pngs(source, texts, output_dir="attention_png"):
    """Render every attention map of ``source`` for ``texts`` to PNG files;
    returns their paths (``<output_dir>/text<i>_<map>.png``)."""
    from keras_posattn.export import ExportedModel
    from keras_posattn.training.attention_images import render_maps

    source = Path(source)
    if (source / "saved_model.pb").is_file():
        maps, tokens = ExportedModel(source).attention(texts)
    else:
        maps, tokens = maps_from_classifier(source, texts)
    images = render_maps(maps, tokens)
    if not images:
        return []
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for tag, image in sorted(images.items()):
        kind, rest = tag.split("/", 1)
        name, example = rest.rsplit("/", 1)
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"text{example.rsplit('_', 1)[1]}_{kind}_{name}")
        path = output_dir / f"{stem}.png"
        Image.fromarray(image).save(path)
        paths.append(path)
    return paths
