"""``keras-posattn attention``: attention heat-maps as PNG files.

For people who do not run TensorBoard: the same images as the training logs'
IMAGES tab, for any text, from a saved classifier (``.keras`` or a training
run folder) or from an export (its ``attention`` signature; TensorFlow only).
"""

import re
from pathlib import Path

import numpy as np
from PIL import Image


def maps_from_classifier(source, texts):
    """``(maps, tokens)`` from a ``.keras`` file or run folder."""
    from keras import ops

    from keras_posattn.export import load_classifier

    classifier = load_classifier(source)
    pre, model = classifier.preprocessor, classifier.model
    ids = ops.convert_to_numpy(pre(list(texts)))
    return model.attention_maps(ids), [pre.display_tokens(row) for row in ids]


def maps_from_export(path, texts):
    """``(maps, tokens)`` from an exported version folder's ``attention`` signature."""
    import tensorflow as tf

    from keras_posattn.export import ATTENTION_SIGNATURE, attention_name

    loaded = tf.saved_model.load(str(path))
    if ATTENTION_SIGNATURE not in loaded.signatures:
        raise ValueError(f"{path}: this export has no attention signature (its model has no "
                         "attention maps, or it was exported before keras-posattn served them).")
    outputs = loaded.signatures[ATTENTION_SIGNATURE](text=tf.constant(list(texts)))
    vocabulary = (Path(path) / "assets" / "vocabulary.txt").read_text(encoding="utf-8").split("\n")
    ids = outputs.pop("token_ids").numpy()
    tokens = [[vocabulary[i] for i in row.reshape(-1) if i != 0] for row in ids]
    return {attention_name(k): v.numpy() for k, v in outputs.items()}, tokens


def write_attention_pngs(source, texts, output_dir="attention_png"):
    """Render every attention map of ``source`` for ``texts`` to PNG files;
    returns their paths (``<output_dir>/text<i>_<map>.png``)."""
    from keras_posattn.training.attention_images import AttentionImages

    source = Path(source)
    if (source / "saved_model.pb").is_file():
        maps, tokens = maps_from_export(source, texts)
    else:
        maps, tokens = maps_from_classifier(source, texts)
    if not maps:
        return []
    images = AttentionImages("unused", lambda ids: maps, np.zeros((len(texts), 1)), tokens,
                             max_examples=len(texts)).render()
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for tag, image in sorted(images.items()):
        kind, name, example = tag.split("/", 1)[0], tag.split("/", 1)[1].rsplit("/", 1)[0], \
            tag.rsplit("_", 1)[1]
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"text{example}_{kind}_{name}")
        path = output_dir / f"{stem}.png"
        Image.fromarray(image).save(path)
        paths.append(path)
    return paths
