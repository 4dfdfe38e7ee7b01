"""Export a trained text classifier as a TF Serving-ready SavedModel.

This module is *the* export path of ``keras_posattn``: a ``TextClassifier``
(the model family's preprocessor + the zoo model, the same strings-to-logits
path as training and ``classifier.keras``) becomes a SavedModel with raw
strings in and class probabilities / ids / names out. The preprocessing is in
the graph, so the serving side needs nothing but TensorFlow (no
``keras_posattn``, no Keras, no vocabulary file).

Signature contract (``serving_default``)
----------------------------------------
Input (exactly one, so TF Serving's REST "row" format works)::

    text           tf.string  [None]       raw, un-tokenized sentences

Outputs::

    probabilities  tf.float32 [None, C]    softmax over the C classes
    class_id       tf.int64   [None]       argmax of ``probabilities``
    label          tf.string  [None]       ``label_names[class_id]``

``C == len(classifier.label_names)``.  Texts longer than the
preprocessor's ``max_length`` are truncated, exactly as in training.

Directory layout (what TF Serving expects)::

    <base_dir>/<name>/<version>/saved_model.pb
                               /variables/...
                               /assets/...

``version`` is a positive integer; TF Serving serves the highest one and
ignores non-integer directory names.

Serving it
----------
::

    docker run -p 8501:8501 \\
        -v $PWD/saved_models/NAME:/models/NAME -e MODEL_NAME=NAME \\
        tensorflow/serving

    curl -d '{"instances": ["a sentence"]}' \\
        localhost:8501/v1/models/NAME:predict
    # -> {"predictions": [{"probabilities": [...], "class_id": 2,
    #                      "label": "pos"}]}

Because ``serving_default`` has a single named input, each element of
``instances`` is fed to ``text`` directly (the "columnar" form
``{"inputs": {"text": ["a sentence"]}}`` works too).  Use a
``tensorflow/serving`` image that is not older than the TensorFlow used to
export: older servers reject ops they do not know
("Op type not registered ...").
"""

from __future__ import annotations

import errno
import numbers
import os
import re
import secrets
import shutil
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import tensorflow as tf
import keras

__all__ = [
    "SERVING_SIGNATURE",
    "INPUT_KEY",
    "OUTPUT_KEYS",
    "export_saved_model",
    "load_exported",
    "predict_exported",
]

SERVING_SIGNATURE = "serving_default"
INPUT_KEY = "text"
OUTPUT_KEYS = ("probabilities", "class_id", "label")

_VERSION_DIR_RE = re.compile(r"[0-9]+")
_TMP_PREFIX = ".tmp-"
_OLD_PREFIX = ".old-"
# Used to sanity-check the pipeline before writing anything.
_PROBE_TEXT = "keras posattn export probe"


# --------------------------------------------------------------------------
# Signatures.  Each builder registers one endpoint on the archive; to add a
# signature later, write one more ``_add_<name>`` function and append it to
# ``_ENDPOINT_BUILDERS``.  The first builder becomes ``serving_default``.
# --------------------------------------------------------------------------


def _add_serving_default(archive, *, classifier, label_names):
    """``serving_default``: raw strings -> probabilities, class_id, label."""
    names = tf.constant(list(label_names), dtype=tf.string)

    # The input key of the written SignatureDef comes from the TensorSpec
    # name (it wins over the Python argument name); both say "text".
    def serving_default(text):
        logits = classifier(text, training=False)
        # Cast first: a mixed-precision model may return float16.
        probabilities = tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1)
        class_id = tf.argmax(probabilities, axis=-1, output_type=tf.int64)
        return {
            "probabilities": probabilities,
            "class_id": class_id,
            "label": tf.gather(names, class_id),
        }

    archive.add_endpoint(
        name=SERVING_SIGNATURE,
        fn=serving_default,
        input_signature=[tf.TensorSpec(shape=[None], dtype=tf.string, name=INPUT_KEY)],
    )


_ENDPOINT_BUILDERS = (_add_serving_default,)


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


def export_saved_model(
    classifier,
    name: str,
    base_dir="saved_models",
    version: int | None = None,
    overwrite: bool = False,
) -> Path:
    """Export a ``TextClassifier`` as ``<base_dir>/<name>/<version>/``.

    Args:
        classifier: a ``keras_posattn.models.TextClassifier`` (preprocessor +
            zoo model, raw strings to logits); its ``label_names`` name the
            classes returned as ``label``.
        name: model name = directory under ``base_dir`` = TF Serving
            ``MODEL_NAME``.  A single path component.
        base_dir: root of the model repository (default ``saved_models``,
            relative to the current directory).
        version: positive integer version.  ``None`` -> one more than the
            largest existing integer version directory (1 if none).
        overwrite: replace an existing ``version`` instead of raising.

    Returns:
        ``pathlib.Path`` of the version directory written
        (``Path(base_dir) / name / str(version)``).

    Raises:
        FileExistsError: ``version`` already exists and ``overwrite`` is
            false.
        ValueError / TypeError: invalid arguments.

    The SavedModel is written to ``<base_dir>/<name>/.tmp-<version>-<hex>``
    and renamed to ``<version>`` only once complete, so a failed export
    never leaves a partial version behind (the temporary directory is
    removed) and TF Serving never picks up a half-written one.  See the
    module docstring for the signature contract and serving commands.
    """
    from keras_posattn.models import TextClassifier

    _check_name(name)
    if not isinstance(classifier, TextClassifier):
        raise TypeError(
            "export_saved_model expects a keras_posattn.models.TextClassifier "
            f"(preprocessor + model), got {type(classifier).__name__}."
        )
    label_names = _check_label_names(classifier.label_names)
    if version is not None:
        version = _check_version(version)
    _check_output_width(classifier, label_names)

    model_dir = Path(base_dir) / name
    model_dir.mkdir(parents=True, exist_ok=True)
    if version is None:
        version = max(_existing_versions(model_dir), default=0) + 1
    final_dir = model_dir / str(version)
    _check_free(model_dir, version, overwrite)

    archive = keras.export.ExportArchive()
    archive.track(classifier)
    for build_endpoint in _ENDPOINT_BUILDERS:
        build_endpoint(archive, classifier=classifier, label_names=label_names)

    tmp_dir = _make_private_dir(model_dir, f"{_TMP_PREFIX}{version}-")
    try:
        archive.write_out(str(tmp_dir), verbose=False)
        _commit(tmp_dir, final_dir, model_dir, version, overwrite)
    except BaseException:
        shutil.rmtree(tmp_dir, ignore_errors=True)
        raise
    return final_dir


def load_exported(path):
    """Load the ``serving_default`` concrete function of a version dir.

    Call it as ``fn(text=tf.constant([...]))``; it returns a dict of tensors
    keyed by ``OUTPUT_KEYS``.  Only TensorFlow is needed.
    """
    loaded = tf.saved_model.load(str(path))
    fn = loaded.signatures[SERVING_SIGNATURE]
    # Keep the loaded object (owner of the variables and lookup tables) alive
    # for as long as the function is; older TF releases could free them.
    fn._keras_posattn_loaded = loaded
    return fn


def predict_exported(path, texts: Iterable[str] | str) -> dict:
    """Run ``serving_default`` on ``texts`` and return numpy arrays.

    Returns ``{"probabilities": float32 (n, C), "class_id": int64 (n,),
    "label": str (n,)}`` (labels decoded from UTF-8).  A single string is
    treated as a batch of one.
    """
    if isinstance(texts, (str, bytes)):
        texts = [texts]
    texts = list(texts)
    fn = load_exported(path)
    outputs = fn(**{INPUT_KEY: tf.constant(texts, dtype=tf.string, shape=[len(texts)])})
    result = {key: value.numpy() for key, value in outputs.items()}
    result["label"] = np.array(
        [b.decode("utf-8") for b in result["label"].tolist()], dtype=str
    )
    return result


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def _check_name(name):
    if (
        not isinstance(name, str)
        or not name
        or name in (".", "..")
        or "/" in name
        or (os.altsep and os.altsep in name)
        or os.sep in name
    ):
        raise ValueError(f"`name` must be a single path component, got {name!r}.")


def _check_label_names(label_names):
    if isinstance(label_names, (str, bytes)):
        raise TypeError("`label_names` must be a sequence of strings, not a string.")
    label_names = list(label_names)
    if not label_names or not all(isinstance(n, str) for n in label_names):
        raise ValueError(f"`label_names` must be a non-empty list of str, got {label_names!r}.")
    return label_names


def _check_version(version):
    if isinstance(version, bool) or not isinstance(version, numbers.Integral):
        raise TypeError(f"`version` must be an int or None, got {version!r}.")
    if version < 1:
        raise ValueError(f"`version` must be >= 1, got {version}.")
    return int(version)


def _check_output_width(classifier, label_names):
    outputs = classifier(tf.constant([_PROBE_TEXT]), training=False)
    shape = tuple(outputs.shape)
    if len(shape) != 2 or shape[-1] != len(label_names):
        raise ValueError(
            f"model output shape {shape} does not match "
            f"(batch, len(label_names)={len(label_names)})."
        )


def _existing_versions(model_dir: Path):
    versions = set()
    for entry in model_dir.iterdir():
        if _VERSION_DIR_RE.fullmatch(entry.name) and entry.is_dir():
            versions.add(int(entry.name))
    return versions


def _check_free(model_dir, version, overwrite):
    if version not in _existing_versions(model_dir) and not (model_dir / str(version)).exists():
        return
    if overwrite and (model_dir / str(version)).is_dir():
        return
    raise FileExistsError(
        f"version {version} already exists in {model_dir} "
        "(pass overwrite=True to replace it, or version=None for the next one)."
    )


def _make_private_dir(parent: Path, prefix: str) -> Path:
    # Not tempfile.mkdtemp: that creates mode 0700, which would survive the
    # rename and could make the version unreadable to a serving user.
    while True:
        path = parent / f"{prefix}{secrets.token_hex(4)}"
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue


def _commit(tmp_dir, final_dir, model_dir, version, overwrite):
    """Move the finished export into place (atomic rename on one filesystem)."""
    if overwrite and final_dir.exists():
        old_dir = model_dir / f"{_OLD_PREFIX}{version}-{secrets.token_hex(4)}"
        os.rename(final_dir, old_dir)
        try:
            os.rename(tmp_dir, final_dir)
        except BaseException:
            os.rename(old_dir, final_dir)
            raise
        shutil.rmtree(old_dir, ignore_errors=True)
        return
    # Re-check just before renaming: another exporter may have taken the
    # version meanwhile (rename onto an *empty* directory would succeed).
    _check_free(model_dir, version, overwrite=False)
    try:
        os.rename(tmp_dir, final_dir)
    except OSError as err:
        if err.errno in (errno.EEXIST, errno.ENOTEMPTY):
            raise FileExistsError(f"version {version} already exists in {model_dir}.") from err
        raise
