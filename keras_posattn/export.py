"""Export a trained text classifier as a TF Serving-ready SavedModel.

This module is *the* export path of ``keras_posattn``: raw strings in,
class probabilities / ids / names out, with the text preprocessing
(``keras.layers.TextVectorization``) baked into the graph so that the
serving side needs nothing but TensorFlow (no ``keras_posattn``, no
Keras, no vocabulary file).

Signature contract (``serving_default``)
----------------------------------------
Input (exactly one, so TF Serving's REST "row" format works)::

    text           tf.string  [None]       raw, un-tokenized sentences

Outputs::

    probabilities  tf.float32 [None, C]    softmax over the C classes
    class_id       tf.int64   [None]       argmax of ``probabilities``
    label          tf.string  [None]       ``label_names[class_id]``

``C == len(label_names)``.  Texts longer than the vectorizer's
``output_sequence_length`` are truncated, shorter ones padded, exactly as
``vectorizer(texts)`` does in Keras.

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
# Used to build (see ``_ensure_built``) and sanity-check the pipeline.
_PROBE_TEXT = "keras posattn export probe"


# --------------------------------------------------------------------------
# Signatures.  Each builder registers one endpoint on the archive; to add a
# signature later, write one more ``_add_<name>`` function and append it to
# ``_ENDPOINT_BUILDERS``.  The first builder becomes ``serving_default``.
# --------------------------------------------------------------------------


def _add_serving_default(archive, *, model, vectorizer, label_names, from_logits):
    """``serving_default``: raw strings -> probabilities, class_id, label."""
    names = tf.constant(list(label_names), dtype=tf.string)

    # The input key of the written SignatureDef comes from the TensorSpec
    # name (it wins over the Python argument name); both say "text".
    def serving_default(text):
        token_ids = vectorizer(text)
        outputs = model(token_ids, training=False)
        # Cast first: a mixed-precision model may return float16.
        outputs = tf.cast(outputs, tf.float32)
        probabilities = tf.nn.softmax(outputs, axis=-1) if from_logits else outputs
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
    model,
    vectorizer,
    label_names: Sequence[str],
    name: str,
    base_dir="saved_models",
    version: int | None = None,
    from_logits: bool = True,
    overwrite: bool = False,
) -> Path:
    """Export ``vectorizer`` + ``model`` as ``<base_dir>/<name>/<version>/``.

    Args:
        model: Keras 3 model mapping int token ids ``(batch, seq_len)`` to
            class logits ``(batch, num_classes)`` (probabilities if
            ``from_logits=False``).
        vectorizer: ``keras.layers.TextVectorization`` with
            ``output_mode="int"`` and a fixed ``output_sequence_length``,
            turning raw strings into the ids ``model`` expects.  It is
            embedded in the SavedModel (vocabulary included).
        label_names: class names; ``len(label_names)`` must equal the
            model's number of outputs.  ``label_names[i]`` is the ``label``
            returned for ``class_id == i``.
        name: model name = directory under ``base_dir`` = TF Serving
            ``MODEL_NAME``.  A single path component.
        base_dir: root of the model repository (default ``saved_models``,
            relative to the current directory).
        version: positive integer version.  ``None`` -> one more than the
            largest existing integer version directory (1 if none).
        from_logits: ``True`` if ``model`` returns logits (softmax is
            applied in-graph), ``False`` if it already returns
            probabilities (only cast to float32).
        overwrite: replace an existing ``version`` instead of raising.

    Returns:
        ``pathlib.Path`` of the version directory written
        (``Path(base_dir) / name / str(version)``).

    Raises:
        FileExistsError: ``version`` already exists and ``overwrite`` is
            false.
        ValueError / TypeError: invalid arguments, or label_names not
            matching the model's output width.

    The SavedModel is written to ``<base_dir>/<name>/.tmp-<version>-<hex>``
    and renamed to ``<version>`` only once complete, so a failed export
    never leaves a partial version behind (the temporary directory is
    removed) and TF Serving never picks up a half-written one.  See the
    module docstring for the signature contract and serving commands.
    """
    _check_name(name)
    label_names = _check_label_names(label_names)
    _check_vectorizer(vectorizer)
    if version is not None:
        version = _check_version(version)

    _ensure_built(model, vectorizer)
    _check_output_width(model, vectorizer, label_names)

    model_dir = Path(base_dir) / name
    model_dir.mkdir(parents=True, exist_ok=True)
    if version is None:
        version = max(_existing_versions(model_dir), default=0) + 1
    final_dir = model_dir / str(version)
    _check_free(model_dir, version, overwrite)

    archive = keras.export.ExportArchive()
    archive.track(vectorizer)
    archive.track(model)
    for build_endpoint in _ENDPOINT_BUILDERS:
        build_endpoint(
            archive,
            model=model,
            vectorizer=vectorizer,
            label_names=label_names,
            from_logits=from_logits,
        )

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


def _check_vectorizer(vectorizer):
    if not isinstance(vectorizer, keras.layers.TextVectorization):
        raise TypeError(
            f"`vectorizer` must be a keras.layers.TextVectorization, got {type(vectorizer)}."
        )
    config = vectorizer.get_config()
    if config.get("output_mode") != "int" or not config.get("output_sequence_length"):
        raise ValueError(
            "`vectorizer` must use output_mode='int' with a fixed "
            f"output_sequence_length; got output_mode={config.get('output_mode')!r}, "
            f"output_sequence_length={config.get('output_sequence_length')!r}."
        )


def _check_version(version):
    if isinstance(version, bool) or not isinstance(version, numbers.Integral):
        raise TypeError(f"`version` must be an int or None, got {version!r}.")
    if version < 1:
        raise ValueError(f"`version` must be >= 1, got {version}.")
    return int(version)


def _ensure_built(model, vectorizer):
    # ExportArchive.track() refuses unbuilt layers, and a TextVectorization
    # created with `vocabulary=` is not built until it is first called.
    probe = tf.constant([_PROBE_TEXT])
    if not vectorizer.built:
        vectorizer(probe)
    if not model.built:
        model(vectorizer(probe))


def _check_output_width(model, vectorizer, label_names):
    outputs = model(vectorizer(tf.constant([_PROBE_TEXT])), training=False)
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
