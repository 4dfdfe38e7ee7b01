"""One shared test of a zoo model family, in the spirit of keras-hub's
``run_model_saving_test``: every family calls ``run_model_test`` once.

``run_model_test(name, small_config)`` checks, through the model contract
only (``keras_posattn.models.base``):

- a small build with overrides is a model of the contract:
  ``model.embedding`` is the ``TokenEmbedding``, ``model.head`` the
  ``ClassificationHead``, ``get_config()`` holds exactly the constructor
  arguments and round-trips (the bare build ``zoo.build(name)`` at the
  paper's defaults is checked for every preset in test_zoo.py);
- the small build takes the preprocessor's inputs (made from
  real strings by the family's ``preprocessor_cls``) and returns finite
  float32 logits, also for an empty text;
- padding invariance: more padding (on every padded axis) changes no logit,
  and a row's logits do not depend on the other rows of its batch;
- dropout: outputs differ with ``training=True`` when the model has dropout,
  never at inference;
- one optimizer step on a fixed batch lowers the loss;
- ``attention_maps`` returns NumPy arrays of the documented shapes;
- a ``.keras`` round trip with ``safe_mode=True`` gives the same logits;
- the SavedModel export of ``TextClassifier(preprocessor, model)``, loaded
  in a separate process that never imports ``keras_posattn`` (one per test
  process, serving each export in turn), gives the Keras probabilities
  (empty string included) and the model's attention maps.
"""

import atexit
import json
import os
import select
import subprocess
import sys
import tempfile

import keras
import numpy as np

from keras_posattn import zoo
from keras_posattn.layers import ClassificationHead
from keras_posattn.layers import TokenEmbedding
from keras_posattn.models import TextClassifier
from keras_posattn.models.base import CONTRACT_ARGUMENTS

WORDS = ("the film was not good but the music was great and the plot never bored "
         "me at all though a few scenes felt long").split()

# A separate process that never imports keras_posattn serves the exports, as
# a TF Serving process serves several models: one per test process (its
# TensorFlow import is most of an export check's time), reading one request a
# line: an export's path and texts; answering with serving_default's
# probabilities for every text and the attention signature's maps for the
# first three.
_SERVER = r"""
import json, sys
sys.modules["keras_posattn"] = None  # keras_posattn is not importable here
import tensorflow as tf
for line in sys.stdin:
    request = json.loads(line)
    signatures = tf.saved_model.load(request["path"]).signatures
    texts = request["texts"]
    out = signatures["serving_default"](text=tf.constant(texts))
    attention = {}
    if "attention" in signatures:
        maps = signatures["attention"](text=tf.constant(texts[:3]))
        attention = {k: v.numpy().tolist() for k, v in maps.items() if k != "token_ids"}
    assert sys.modules["keras_posattn"] is None
    print(json.dumps({"probabilities": out["probabilities"].numpy().tolist(),
                      "attention": attention}), flush=True)
"""
_server = {}


def _serve(path, texts, timeout=300):
    """``_SERVER``'s answer for the export at ``path`` (started on first use)."""
    proc = _server.get("proc")
    if proc is None or proc.poll() is not None:
        log = tempfile.TemporaryFile(mode="w+")
        proc = subprocess.Popen(
            [sys.executable, "-c", _SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=log, text=True, cwd=tempfile.gettempdir(),
            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
        _server.update(proc=proc, log=log)
        atexit.register(proc.kill)
    proc.stdin.write(json.dumps({"path": str(path), "texts": texts}) + "\n")
    proc.stdin.flush()
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    line = proc.stdout.readline() if ready else ""
    if not line:
        proc.kill()
        _server["log"].seek(0)
        raise AssertionError(f"the serving process gave no answer for {path}:\n"
                             + _server["log"].read()[-3000:])
    return json.loads(line)


def sample_texts(count=6, seed=0, max_words=12):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(1, max_words + 1))))
            for _ in range(count)]


def sample_documents(count=6, seed=0, max_sentences=4, max_words=9):
    """Documents of 1 to ``max_sentences`` sentences ("... . ... !"), for
    hierarchical models."""
    rng = np.random.default_rng(seed)
    documents = []
    for _ in range(count):
        n = int(rng.integers(1, max_sentences + 1))
        sentences = sample_texts(n, seed=int(rng.integers(1 << 30)), max_words=max_words)
        ends = rng.choice([".", "!", "?"], size=n)
        documents.append(" ".join(s + e for s, e in zip(sentences, ends)))
    return documents


def pad_inputs(inputs, extra):
    """Add ``extra`` padding positions on every non-batch axis."""
    inputs = np.asarray(inputs)
    widths = [(0, 0)] + [(0, extra)] * (inputs.ndim - 1)
    return np.pad(inputs, widths).astype(inputs.dtype)


def one_document(ids):
    """One document's token ids (sentences, words) with no padding but its
    sentences' own: its sentences with words, as wide as its longest, as a
    batch of one (1, S, W); a document without words is one empty sentence."""
    rows = [row for row in np.asarray(ids) if (row != 0).any()]
    if not rows:
        return np.zeros((1, 1, 1), "int32")
    width = max(int(np.flatnonzero(row).max()) + 1 for row in rows)
    return np.stack([row[:width] for row in rows])[None].astype("int32")


def to_numpy(x):
    return keras.ops.convert_to_numpy(x)


def check_contract(model):
    assert isinstance(model.embedding, TokenEmbedding)
    assert isinstance(model.head, ClassificationHead)
    assert model.head.num_classes == model.num_classes
    arguments = set(type(model).constructor_arguments())
    assert set(CONTRACT_ARGUMENTS) <= arguments, set(CONTRACT_ARGUMENTS) - arguments
    config = model.get_config()
    assert set(config) == arguments | {"name", "trainable"}, set(config) ^ arguments
    json.dumps(config)  # serialisable as is
    assert type(model).from_config(config).get_config() == config
    assert model.embedding.output_dim == model.embedding_dim


def run_model_test(name, small_config, num_classes=3, check_export=True, seed=0, texts=None):
    """Run the shared checks on zoo model ``name`` (see the module docstring).

    Args:
        name: a zoo preset name.
        small_config: constructor overrides that make the model small and
            fast (e.g. ``{"embedding_dim": 16}``).
        num_classes: classes of the small model.
        check_export: also export and serve it from a separate process (slowest).
        texts: the training texts (default: ``sample_texts``; documents of
            several sentences for hierarchical models, ``sample_documents``).

    Returns:
        The small model and its preprocessor.
    """
    # (the bare build at the paper's size is test_zoo's, for every preset)
    texts = sample_texts(8, seed=seed) if texts is None else list(texts)
    cls = zoo.families()[zoo.get_preset(name)["family"]]
    preprocessor = cls.preprocessor_cls.from_texts(texts)
    keras.utils.set_random_seed(seed)
    model = zoo.build(name, num_classes=num_classes,
                      vocabulary_size=preprocessor.vocabulary_size,
                      max_length=preprocessor.max_length + 64, **small_config)
    check_contract(model)

    inputs = to_numpy(preprocessor(texts + [""]))
    logits = to_numpy(model(inputs, training=False))
    assert logits.shape == (len(texts) + 1, num_classes)
    assert logits.dtype == np.float32
    assert np.isfinite(logits).all(), "non-finite logits (the empty text is the last row)"

    # --- padding invariance and independent rows ---
    for extra in (3, 40):
        padded = to_numpy(model(pad_inputs(inputs, extra), training=False))
        np.testing.assert_allclose(padded, logits, atol=1e-5, err_msg=f"+{extra} padding")
    for i in (0, 2):
        alone = to_numpy(model(to_numpy(preprocessor([texts[i]])), training=False))
        np.testing.assert_allclose(alone[0], logits[i], atol=1e-5, err_msg=f"row {i} alone")
    np.testing.assert_array_equal(to_numpy(model(inputs, training=False)), logits)

    # --- dropout only in training ---
    if getattr(model, "dropout", 0):
        trained = [to_numpy(model(inputs, training=True)) for _ in range(2)]
        assert not np.allclose(trained[0], trained[1]), "dropout=%s changes nothing" % model.dropout

    # --- attention maps ---
    maps = model.attention_maps(inputs[:2])
    assert isinstance(maps, dict)
    for key, value in maps.items():
        assert isinstance(value, np.ndarray), key
        assert value.shape[0] == 2 and value.ndim in (2, 3), (key, value.shape)
        assert np.isfinite(value).all(), key

    # --- one optimizer step lowers the loss ---
    # (the loss of the logits above and of the trained model's, computed
    # eagerly: Keras's evaluate would trace the model once more;
    # train_on_batch runs it in graph mode, the export traces inference)
    labels = np.arange(len(inputs)) % num_classes
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss=loss)
    before = float(loss(labels, logits))
    model.train_on_batch(inputs, labels)
    logits = to_numpy(model(inputs, training=False))
    after = float(loss(labels, logits))
    assert np.isfinite(after) and after < before, (before, after)

    # --- .keras round trip, safe mode ---
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, f"{name}.keras")
        model.save(path)
        loaded = keras.saving.load_model(path, safe_mode=True)
    assert type(loaded) is type(model)
    assert loaded.get_config() == model.get_config()
    np.testing.assert_allclose(to_numpy(loaded(inputs, training=False)), logits, atol=1e-6)

    # --- export, served by a separate process without keras_posattn ---
    if check_export:
        check_served_export(model, preprocessor,
                                   texts + ["", "unknownword " * 300, "word. " * 100])
    return model, preprocessor


def check_mixed_precision(model):
    """For a model built under a mixed dtype policy (the ``dtype_policy``
    fixture): float32, finite logits for a text, a one-token text and an
    empty one (token ids below 8)."""
    ids = np.array([[4, 5, 6, 0], [7, 0, 0, 0], [0, 0, 0, 0]], "int32")
    logits = model(ids, training=False)
    assert keras.backend.standardize_dtype(logits.dtype) == "float32"
    assert np.isfinite(to_numpy(logits)).all()


def check_served_export(model, preprocessor, texts):
    from keras_posattn.export import attention_name
    from keras_posattn.export import export_saved_model

    labels = [f"label_{i}" for i in range(model.num_classes)]
    classifier = TextClassifier(preprocessor, model, label_names=labels)
    reference = classifier.predict_probabilities(texts)
    with tempfile.TemporaryDirectory() as folder:
        path = export_saved_model(classifier, name="model", base_dir=folder)
        served = _serve(path, texts)
    probabilities = np.asarray(served["probabilities"])
    attention = {attention_name(k): np.asarray(v) for k, v in served["attention"].items()}
    assert np.isfinite(probabilities).all()
    np.testing.assert_allclose(probabilities, reference, atol=1e-5)
    # The export's attention signature serves the model's own maps.
    expected = model.attention_maps(keras.ops.convert_to_numpy(preprocessor(texts[:3])))
    assert sorted(attention) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_allclose(attention[name], value, atol=1e-5, err_msg=name)
