"""Export a trained text classifier as a TF Serving-ready SavedModel.

This module is *the* export path of ``keras_posattn``: a ``TextClassifier``
(the model family's preprocessor + the zoo model, the same strings-to-logits
path as training and ``classifier.keras``) becomes a SavedModel that stock
``tensorflow/serving`` loads. The preprocessing is in the graph and uses core
TensorFlow ops only, so the serving side needs nothing but TensorFlow (no
``keras_posattn``, no Keras, no tensorflow-text, no vocabulary file).

Signatures
----------
``serving_default`` (one input, so TF Serving's REST "row" format works)::

    inputs:  text           tf.string  [None]        raw, un-tokenized texts
    outputs: probabilities  tf.float32 [None, C]     softmax over the C classes
             class_id       tf.int64   [None]        argmax of probabilities
             label          tf.string  [None]        label_names[class_id]

``token_ids``: the same outputs from token ids, for users who tokenize
elsewhere (``assets/vocabulary.txt`` gives the ids; 0 = padding, 1 = unknown)::

    inputs:  token_ids      tf.int32   [None, None]  (documents: [None, None, None])

``classify``: TF Serving's Classify API (method ``tensorflow/serving/classify``)::

    inputs:  inputs         tf.string  [None]        serialized tf.Example, feature "text"
    outputs: classes        tf.string  [None, C]     the class names
             scores         tf.float32 [None, C]     their probabilities

``attention`` (models with attention worth drawing): ``text`` in, the
``token_ids`` and every map of ``model.attention_tensors`` out (a "/" in a
map's name becomes "__"); ``keras-posattn attention <export> "a text"`` draws
them.

Texts longer than the preprocessor's ``max_length`` are truncated, exactly as
in training; empty strings, non-UTF-8 bytes and control characters give
finite probabilities.

Directory layout (a TF Serving model repository)::

    <base_dir>/models.config                 one entry per exported model
    <base_dir>/<name>/<version>/saved_model.pb
                               /variables/...
                               /assets/labels.txt, vocabulary.txt
                               /assets.extra/tf_serving_warmup_requests
                               /assets.extra/keras_posattn.json

Versions are positive integers that only grow: an export takes the next
version after the highest present, never replaces one, and is written to a
temporary folder renamed into place once complete. The word embedding is
exported as one table (frozen pretrained and trained OOV rows merged).

Serving it: see the README ("Serving with TensorFlow Serving") for the
``docker run ... tensorflow/serving`` command, a ``models.config`` with version
policies, and ``curl`` examples; ``keras_posattn.serving`` answers TF Serving's
REST bodies and protos from an export, without a server, for tests.
"""

from __future__ import annotations

import errno
import json
import numbers
import os
import re
import secrets
import shutil
import socket
import time
from pathlib import Path
from typing import Iterable

import keras
import numpy as np
import tensorflow as tf

__all__ = [
    "CLASSIFY_METHOD",
    "CLASSIFY_SIGNATURE",
    "ExportedModel",
    "INPUT_KEY",
    "OUTPUT_KEYS",
    "SERVING_SIGNATURE",
    "TOKEN_IDS_SIGNATURE",
    "WARMUP_BATCH_SIZES",
    "export_saved_model",
    "load_classifier",
    "load_exported",
    "merged_embedding_model",
    "predict_exported",
    "write_model_config",
]

SERVING_SIGNATURE = "serving_default"
TOKEN_IDS_SIGNATURE = "token_ids"
CLASSIFY_SIGNATURE = "classify"
ATTENTION_SIGNATURE = "attention"
INPUT_KEY = "text"
OUTPUT_KEYS = ("probabilities", "class_id", "label")
#: TF Serving's method names of a predict and a classify signature.
PREDICT_METHOD = "tensorflow/serving/predict"
CLASSIFY_METHOD = "tensorflow/serving/classify"
#: Batch sizes of the warm-up requests TF Serving replays when it loads a version.
WARMUP_BATCH_SIZES = (1, 8, 64)
WARMUP_FILE = "tf_serving_warmup_requests"
METADATA_FILE = "keras_posattn.json"
MODEL_CONFIG_FILE = "models.config"

_VERSION_DIR_RE = re.compile(r"[0-9]+")
_TMP_PREFIX = ".tmp-"
_PROBE_TEXT = "keras posattn export probe"
_WARMUP_TEXTS = (
    "a short sentence",
    "",
    "an unusually long review that keeps going, and going, with commas; and more words "
    "than most of the training texts had, to warm up the longest padding bucket too",
)


# --------------------------------------------------------------------------
# Signatures
# --------------------------------------------------------------------------


def _outputs(logits, names):
    # Cast first: a mixed-precision model may return float16.
    probabilities = tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1)
    class_id = tf.argmax(probabilities, axis=-1, output_type=tf.int64)
    return {
        "probabilities": probabilities,
        "class_id": class_id,
        "label": tf.gather(names, class_id),
    }


def _add_endpoints(archive, classifier, label_names):
    names = tf.constant(list(label_names), dtype=tf.string)
    preprocessor, model = classifier.preprocessor, classifier.model
    rank = 1 + int(getattr(preprocessor, "input_rank", 1))

    # The model's forward pass, traced once and called by the three
    # signatures that return probabilities (each traced its own copy of the
    # model before: exports took 1.1-1.6x as long, BENCHMARKS.md "Start-up").
    @tf.function(input_signature=[tf.TensorSpec(shape=[None] * rank, dtype=tf.int32)])
    def logits(ids):
        return model(ids, training=False)

    # The input key of a written SignatureDef comes from the TensorSpec name.
    def serving_default(text):
        return _outputs(logits(tf.cast(preprocessor(text), tf.int32)), names)

    archive.add_endpoint(
        name=SERVING_SIGNATURE,
        fn=serving_default,
        input_signature=[tf.TensorSpec(shape=[None], dtype=tf.string, name=INPUT_KEY)],
    )

    def token_ids(ids):
        return _outputs(logits(tf.cast(ids, tf.int32)), names)

    archive.add_endpoint(
        name=TOKEN_IDS_SIGNATURE,
        fn=token_ids,
        input_signature=[tf.TensorSpec(shape=[None] * rank, dtype=tf.int32, name="token_ids")],
    )

    def classify(inputs):
        features = tf.io.parse_example(
            inputs, {INPUT_KEY: tf.io.FixedLenFeature([], tf.string, default_value="")}
        )
        scores = _outputs(logits(tf.cast(preprocessor(features[INPUT_KEY]), tf.int32)), names)
        probabilities = scores["probabilities"]
        classes = tf.tile(names[None, :], [tf.shape(probabilities)[0], 1])
        return {"classes": classes, "scores": probabilities}

    archive.add_endpoint(
        name=CLASSIFY_SIGNATURE,
        fn=classify,
        input_signature=[tf.TensorSpec(shape=[None], dtype=tf.string, name="inputs")],
    )

    if model.attention_tensors(preprocessor(tf.constant([_PROBE_TEXT]))):

        def attention(text):
            ids = preprocessor(text)
            maps = model.attention_tensors(ids)
            outputs = {attention_key(k): tf.cast(v, tf.float32) for k, v in maps.items()}
            outputs["token_ids"] = ids
            return outputs

        archive.add_endpoint(
            name=ATTENTION_SIGNATURE,
            fn=attention,
            input_signature=[tf.TensorSpec(shape=[None], dtype=tf.string, name=INPUT_KEY)],
        )


def attention_key(name):
    """A model's attention-map name as a signature output key ("/" -> "__")."""
    return name.replace("/", "__")


def attention_name(key):
    """The inverse of ``attention_key``."""
    return key.replace("__", "/")


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


def export_saved_model(
    classifier,
    name: str,
    base_dir="saved_models",
    version: int | None = None,
    warmup: bool = True,
    model_config: bool = True,
    merge_embedding: bool = True,
    metadata: dict | None = None,
) -> Path:
    """Export a ``TextClassifier`` as ``<base_dir>/<name>/<version>/``.

    Args:
        classifier: a ``keras_posattn.models.TextClassifier`` (preprocessor +
            zoo model, raw strings to logits); its ``label_names`` name the
            classes returned as ``label``.
        name: model name = directory under ``base_dir`` = TF Serving
            ``MODEL_NAME``. A single path component.
        base_dir: root of the model repository (default ``saved_models``).
        version: a positive integer above every existing version; None (the
            default) takes the next one (1 for a new name).
        warmup: write TF Serving warm-up requests (``assets.extra``), one
            ``serving_default`` request per batch size in
            ``WARMUP_BATCH_SIZES``.
        model_config: add or refresh this model's entry in
            ``<base_dir>/models.config``.
        merge_embedding: export frozen pretrained and trained OOV rows as
            one table (see ``serving_classifier``); False keeps the two
            tables of training (larger, for comparisons).
        metadata: more JSON-ready entries for ``assets.extra``'s description
            (the trainer adds how the run's word vectors were made).

    Returns:
        ``pathlib.Path`` of the version directory written.

    Raises:
        FileExistsError: ``version`` is not above every existing version.
        ValueError / TypeError: invalid arguments.
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
    served = serving_classifier(classifier) if merge_embedding else classifier

    model_dir = Path(base_dir) / name
    model_dir.mkdir(parents=True, exist_ok=True)
    latest = max(_existing_versions(model_dir), default=0)
    if version is None:
        version = latest + 1
    _check_free(model_dir, version)

    archive = keras.export.ExportArchive()
    # Track the preprocessor (its lookup table) but not the model: tracking a
    # model saves every weight twice (Keras 3.15 keeps the Keras variables it
    # tracks and the tf.Variables the endpoints use as separate checkpoint
    # entries); add_endpoint() already keeps the variables the signatures use.
    archive.track(served.preprocessor)
    _add_endpoints(archive, served, label_names)

    clean_stale_exports(model_dir)
    tmp_dir = _make_private_dir(model_dir, _tmp_prefix(version))
    try:
        archive.write_out(str(tmp_dir), verbose=False)
        _set_classify_method(tmp_dir)
        _write_assets(tmp_dir, served, label_names, metadata)
        if warmup:
            _write_warmup_requests(tmp_dir, name)
        _commit(tmp_dir, model_dir / str(version), model_dir, version)
    except BaseException:
        shutil.rmtree(tmp_dir, ignore_errors=True)
        raise
    if model_config:
        write_model_config(base_dir)
    return model_dir / str(version)


def merged_embedding_model(model):
    """``model`` with one embedding table, as served.

    A model trained with ``trainable_embeddings="oov"`` keeps its frozen
    pretrained rows and its trained OOV rows in two full tables; serving
    needs one. This rebuilds the model from its config with a plain table,
    copies every other layer's weights, and loads the merged rows (the
    model contract's ``model.embedding``). Other models are returned as they
    are. (``benchmarks/bench_reference.py`` times models this way too.)
    """
    config = model.get_config()
    if config.get("trainable_embeddings") != "oov":
        return model
    config["trainable_embeddings"] = "all"
    merged = type(model).from_config(config)
    for layer in model.layers:
        if layer.name == model.embedding.name or not layer.weights:
            continue
        merged.get_layer(layer.name).set_weights(layer.get_weights())
    merged.embedding.embeddings.assign(model.embedding.table())
    return merged


def serving_classifier(classifier):
    """The classifier as served: its model with one embedding table
    (``merged_embedding_model``); the classifier itself when nothing merges."""
    from keras_posattn.models import TextClassifier

    merged = merged_embedding_model(classifier.model)
    if merged is classifier.model:
        return classifier
    return TextClassifier(classifier.preprocessor, merged, label_names=classifier.label_names,
                          name=classifier.name)


def load_classifier(path):
    """A ``TextClassifier`` from a ``.keras`` file or a training run folder.

    A folder is a ``keras-posattn train`` output: its ``classifier.keras``
    (saved at the end) or, for an unfinished run, the per-epoch
    ``checkpoints/last.keras``.
    """
    from keras_posattn.models import TextClassifier

    path = Path(path)
    if path.is_dir():
        for candidate in (path / "classifier.keras", path / "checkpoints" / "last.keras"):
            if candidate.is_file():
                path = candidate
                break
        else:
            raise FileNotFoundError(
                f"{path}: no classifier.keras or checkpoints/last.keras (is it a "
                "`keras-posattn train` output folder?)."
            )
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file.")
    import keras_posattn.models  # noqa: F401  (registers the classes safe_mode loads)

    loaded = keras.saving.load_model(path, safe_mode=True)
    if not isinstance(loaded, TextClassifier):
        raise ValueError(
            f"{path} holds a {type(loaded).__name__}, not a TextClassifier (raw strings in); "
            "export the run's classifier.keras or checkpoints/last.keras."
        )
    return loaded


def read_metadata(path):
    """The export's ``assets.extra`` description (``{}`` if it has none)."""
    file = Path(path) / "assets.extra" / METADATA_FILE
    return json.loads(file.read_text(encoding="utf-8")) if file.exists() else {}


class ExportedModel:
    """An exported version folder, read (TensorFlow only): the one place an
    export is loaded, for ``predict_exported``, ``keras-posattn attention``
    and ``keras_posattn.serving.ServedModel``.

    Attributes:
        path: the version folder.
        loaded: the loaded SavedModel (owner of the variables and tables).
        signature_defs: ``{name: SignatureDef}`` as written in
            ``saved_model.pb`` (method names included).
    """

    def __init__(self, path):
        from tensorflow.core.protobuf import saved_model_pb2

        self.path = Path(path)
        saved_model = saved_model_pb2.SavedModel()
        saved_model.ParseFromString((self.path / "saved_model.pb").read_bytes())
        self.signature_defs = dict(saved_model.meta_graphs[0].signature_def)
        self.metadata = read_metadata(self.path)
        if self.metadata.get("requires_tensorflow_text"):
            # Its preprocessor's ops (WordPiece) register with this import.
            from keras_posattn.preprocessing import require_tensorflow_text

            require_tensorflow_text()
        self.loaded = tf.saved_model.load(str(self.path))

    def signature(self, name=SERVING_SIGNATURE):
        """The concrete function of signature ``name``."""
        if name not in self.loaded.signatures:
            raise ValueError(f"{self.path}: no signature {name!r}; it has "
                             f"{', '.join(sorted(self.loaded.signatures))}.")
        fn = self.loaded.signatures[name]
        # Keep the loaded object (owner of the variables and lookup tables)
        # alive for as long as the function is.
        fn._keras_posattn_loaded = self.loaded
        return fn

    @property
    def vocabulary(self):
        """``assets/vocabulary.txt``: the token of each id (0 = padding)."""
        return (self.path / "assets" / "vocabulary.txt").read_text(encoding="utf-8").split("\n")

    def predict(self, texts: Iterable[str] | str) -> dict:
        """``serving_default`` on ``texts`` (a single string is a batch of
        one): ``{"probabilities": float32 (n, C), "class_id": int64 (n,),
        "label": str (n,)}``, labels decoded from UTF-8."""
        texts = [texts] if isinstance(texts, (str, bytes)) else list(texts)
        outputs = self.signature()(
            **{INPUT_KEY: tf.constant(texts, dtype=tf.string, shape=[len(texts)])})
        result = {key: value.numpy() for key, value in outputs.items()}
        result["label"] = np.array([b.decode("utf-8") for b in result["label"].tolist()],
                                   dtype=str)
        return result

    def attention(self, texts):
        """``(maps, tokens)`` for ``texts`` from the ``attention`` signature:
        the model's attention maps by name (as ``model.attention_maps``) and
        each text's tokens."""
        if ATTENTION_SIGNATURE not in self.loaded.signatures:
            raise ValueError(f"{self.path}: this export has no attention signature (its model "
                             "has no attention maps, or it was exported before keras-posattn "
                             "served them).")
        outputs = self.signature(ATTENTION_SIGNATURE)(**{INPUT_KEY: tf.constant(list(texts))})
        vocabulary = self.vocabulary
        ids = outputs.pop("token_ids").numpy()
        tokens = [[vocabulary[i] for i in row.reshape(-1) if i != 0] for row in ids]
        return {attention_name(k): v.numpy() for k, v in outputs.items()}, tokens


def load_exported(path, signature=SERVING_SIGNATURE):
    """Load one signature of an exported version folder (TensorFlow only)."""
    return ExportedModel(path).signature(signature)


def predict_exported(path, texts: Iterable[str] | str) -> dict:
    """Run ``serving_default`` on ``texts`` (``ExportedModel.predict``)."""
    return ExportedModel(path).predict(texts)


def write_model_config(base_dir, num_versions=2):
    """Write ``<base_dir>/models.config``: a TF Serving ModelServerConfig with
    one entry per model folder in ``base_dir`` (those holding an integer
    version), each serving its ``num_versions`` latest versions.

    Start the server with ``--model_config_file=/models/models.config``.
    """
    from keras_posattn.serving_files import model_server_config

    base_dir = Path(base_dir)
    models = [(folder.name, f"/models/{folder.name}", num_versions)
              for folder in sorted(p for p in base_dir.iterdir() if p.is_dir())
              if _existing_versions(folder)]
    path = base_dir / MODEL_CONFIG_FILE
    tmp = base_dir / f".{MODEL_CONFIG_FILE}.{secrets.token_hex(4)}"
    tmp.write_text(model_server_config(models), encoding="utf-8")
    os.replace(tmp, path)
    return path


# --------------------------------------------------------------------------
# What is written beside the graph
# --------------------------------------------------------------------------


def _set_classify_method(export_dir):
    """Mark the ``classify`` signature with TF Serving's classify method name.

    TF2 writes every signature as ``tensorflow/serving/predict``; TF Serving's
    Classify API refuses a signature whose method name is not
    ``tensorflow/serving/classify``.
    """
    from tensorflow.core.protobuf import saved_model_pb2

    path = Path(export_dir) / "saved_model.pb"
    saved_model = saved_model_pb2.SavedModel()
    saved_model.ParseFromString(path.read_bytes())
    for meta_graph in saved_model.meta_graphs:
        if CLASSIFY_SIGNATURE in meta_graph.signature_def:
            meta_graph.signature_def[CLASSIFY_SIGNATURE].method_name = CLASSIFY_METHOD
    path.write_bytes(saved_model.SerializeToString())


def _write_assets(export_dir, classifier, label_names, extra_metadata=None):
    """Class names and vocabulary as assets; a JSON description as assets.extra."""
    assets = Path(export_dir) / "assets"
    assets.mkdir(exist_ok=True)
    (assets / "labels.txt").write_text("\n".join(label_names) + "\n", encoding="utf-8")
    preprocessor = classifier.preprocessor
    vocabulary = list(getattr(preprocessor, "vocabulary", []))
    (assets / "vocabulary.txt").write_text("\n".join(vocabulary) + "\n", encoding="utf-8")
    extra = Path(export_dir) / "assets.extra"
    extra.mkdir(exist_ok=True)
    model = classifier.model
    metadata = {
        "model": model.name,
        "family": getattr(model, "family", None),
        "label_names": list(label_names),
        "preprocessor": type(preprocessor).__name__,
        "max_length": getattr(preprocessor, "max_length", None),
        "vocabulary_size": len(vocabulary),
        "signatures": {
            SERVING_SIGNATURE: "text (string [None]) -> probabilities, class_id, label",
            TOKEN_IDS_SIGNATURE: "token_ids (int32, 0 = padding, 1 = unknown; assets/vocabulary.txt) "
                                 "-> probabilities, class_id, label",
            CLASSIFY_SIGNATURE: "inputs (serialized tf.Example, feature 'text') -> classes, scores",
        },
        "requires_tensorflow_text": bool(getattr(preprocessor, "needs_tensorflow_text", False)),
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
    }
    if metadata["requires_tensorflow_text"]:
        import tensorflow_text

        metadata["tensorflow_text"] = tensorflow_text.__version__
        metadata["custom_ops"] = ["FastWordpieceTokenizeWithOffsets"]
    metadata.update(extra_metadata or {})
    if model.attention_tensors(preprocessor(tf.constant([_PROBE_TEXT]))):
        metadata["signatures"][ATTENTION_SIGNATURE] = (
            "text -> token_ids and each attention map of the model (keras-posattn attention)")
    (extra / METADATA_FILE).write_text(json.dumps(metadata, indent=2), encoding="utf-8")


def _write_warmup_requests(export_dir, name):
    """``assets.extra/tf_serving_warmup_requests``: PredictionLog TFRecords
    that TF Serving replays before it serves a version, one request per
    batch size of ``WARMUP_BATCH_SIZES``."""
    from keras_posattn.serving_files import predict_log

    path = Path(export_dir) / "assets.extra" / WARMUP_FILE
    path.parent.mkdir(exist_ok=True)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for batch in WARMUP_BATCH_SIZES:
            texts = [_WARMUP_TEXTS[i % len(_WARMUP_TEXTS)] for i in range(batch)]
            inputs = {INPUT_KEY: tf.make_tensor_proto(texts, dtype=tf.string)}
            writer.write(predict_log(name, SERVING_SIGNATURE, inputs))


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
    for entry in Path(model_dir).iterdir():
        if _VERSION_DIR_RE.fullmatch(entry.name) and entry.is_dir():
            versions.add(int(entry.name))
    return versions


def _check_free(model_dir, version):
    """Versions only grow: ``version`` must be above every existing one."""
    latest = max(_existing_versions(model_dir), default=0)
    if version <= latest or (Path(model_dir) / str(version)).exists():
        raise FileExistsError(
            f"version {version} is not above the latest version {latest} in {model_dir}: "
            "an export never replaces or precedes an existing version "
            "(pass version=None for the next one)."
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


def _commit(tmp_dir, final_dir, model_dir, version):
    """Move the finished export into place (atomic rename on one filesystem)."""
    # Re-check just before renaming: another exporter may have taken the
    # version meanwhile (a rename onto an *empty* directory would succeed).
    _check_free(model_dir, version)
    try:
        os.rename(tmp_dir, final_dir)
    except OSError as err:
        if err.errno in (errno.EEXIST, errno.ENOTEMPTY):
            raise FileExistsError(
                f"version {version} of {model_dir} was written by another export meanwhile; "
                "export again for the next version.") from err
        raise


def _host_tag():
    """This machine's name as export temporary folders spell it."""
    return re.sub(r"[^A-Za-z0-9_.]+", "_", socket.gethostname())


def _tmp_prefix(version):
    """``.tmp-<version>-<host>-<pid>-``: an export's temporary folder names
    the process writing it, so a killed export's leftovers can be told from
    a running one's."""
    return f"{_TMP_PREFIX}{version}-{_host_tag()}-{os.getpid()}-"


def clean_stale_exports(model_dir):
    """Remove the temporary folders of killed exports in ``model_dir`` (a
    writer on this host that no longer runs) and report, with a warning,
    those whose writer cannot be told (older names, another host's, over a
    day old). Returns the folders removed."""
    import warnings

    from keras_posattn.utils import process_alive

    removed = []
    for entry in sorted(Path(model_dir).glob(f"{_TMP_PREFIX}*")):
        match = re.fullmatch(rf"{re.escape(_TMP_PREFIX)}\d+-(.+)-(\d+)-[0-9a-f]+", entry.name)
        here = match is not None and match.group(1) == _host_tag()
        if here and not process_alive(int(match.group(2))):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
            print(f"Removed {entry}: left by a killed export (pid {match.group(2)}).", flush=True)
        elif not here or time.time() - entry.stat().st_mtime > 86400:
            warnings.warn(f"{entry} looks like an unfinished export of another process; "
                          "remove it if no export is running.", stacklevel=2)
    return removed
