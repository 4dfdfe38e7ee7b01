"""Keras' conventions for zoo models and ``TextClassifier``: ``compile()``
defaults for logits, raw strings in ``fit``/``predict``/``evaluate``, the
compile config that is saved, registration on ``import keras_posattn``."""

import json
import os
import subprocess
import sys
import warnings
import zipfile

import keras
import numpy as np
import pytest

from keras_posattn import zoo
from keras_posattn.models import TextClassifier
from keras_posattn.preprocessing import TextPreprocessor

TEXTS = ["a good film", "a bad film", "not good at all", "very bad indeed",
         "good good good", "bad and boring", "truly good", "bad"]
LABELS = [1, 0, 0, 0, 1, 0, 1, 0]
NAMES = ["negative", "positive"]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# The conventions are the base classes', the same for every family: the tests
# use Kim's CNN, the quickest to trace (MPSAN's training step took ~5x as long).
SMALL = dict(embedding_dim=8, filters=4)


def small_model():
    return zoo.build("kim_cnn_nonstatic", num_classes=2, vocabulary_size=30, max_length=6, **SMALL)


def classifier():
    keras.utils.set_random_seed(0)
    pre = TextPreprocessor.from_texts(TEXTS, max_length=6)
    net = zoo.build("kim_cnn_nonstatic", num_classes=2, vocabulary_size=pre.vocabulary_size,
                    max_length=6, **SMALL)
    return TextClassifier(pre, net, label_names=NAMES)


def crossentropy_of_logits(logits, labels):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return float(-log_p[np.arange(len(labels)), labels].mean())


@pytest.mark.parametrize("make", [small_model, classifier], ids=["zoo_model", "text_classifier"])
def test_compile_without_arguments_trains_on_logits(make):
    model = make()
    model.compile()
    assert isinstance(model.optimizer, keras.optimizers.Adam)
    assert keras.ops.convert_to_numpy(model.optimizer.learning_rate) == pytest.approx(1e-3)
    assert isinstance(model.loss, keras.losses.SparseCategoricalCrossentropy)
    assert model.loss.get_config()["from_logits"] is True
    if make is classifier:
        x, y = np.array(TEXTS, dtype=object), np.array(LABELS)
    else:
        x = np.random.default_rng(0).integers(2, 30, size=(8, 6)).astype("int32")
        y = np.array(LABELS)
    logs = model.evaluate(x, y, verbose=0, return_dict=True)
    assert set(logs) == {"loss", "accuracy"}
    expected = crossentropy_of_logits(model.predict(x, verbose=0), y)
    assert logs["loss"] == pytest.approx(expected, rel=1e-4)


@pytest.mark.parametrize("loss", ["sparse_categorical_crossentropy", "SparseCategoricalCrossentropy",
                                  keras.losses.sparse_categorical_crossentropy])
def test_a_crossentropy_named_by_string_is_taken_on_logits(loss):
    model = small_model()
    model.compile(optimizer="sgd", loss=loss)
    x = np.random.default_rng(1).integers(2, 30, size=(8, 6)).astype("int32")
    y = np.array(LABELS)
    loss_value = model.evaluate(x, y, verbose=0, return_dict=True)["loss"]
    assert loss_value == pytest.approx(crossentropy_of_logits(model.predict(x, verbose=0), y),
                                       rel=1e-4)
    assert isinstance(model.optimizer, keras.optimizers.SGD)


def test_a_probability_crossentropy_is_refused():
    with pytest.raises(ValueError, match="outputs logits; pass from_logits=True"):
        small_model().compile(loss=keras.losses.SparseCategoricalCrossentropy())


def test_other_losses_and_metrics_are_kept():
    model = small_model()
    model.compile(loss="mse", metrics=["mae"])
    assert model.loss == "mse"


@pytest.mark.parametrize("as_", ["list", "numpy", "tuple"])
def test_fit_predict_evaluate_take_python_strings(as_):
    clf = classifier()
    clf.compile()
    x = {"list": list(TEXTS), "numpy": np.array(TEXTS), "tuple": tuple(TEXTS)}[as_]
    history = clf.fit(x, LABELS, validation_data=(x, LABELS), epochs=2, batch_size=4, verbose=0)
    assert set(history.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert clf.predict(x, verbose=0).shape == (len(TEXTS), 2)
    assert set(clf.evaluate(x, LABELS, verbose=0, return_dict=True)) == {"loss", "accuracy"}


def count_traces(model, monkeypatch):
    """A list that gets one entry each time ``model``'s training step is
    traced (its Python body runs once a trace)."""
    traces = []
    original = keras.Model.train_step

    def counted(self, batch):
        traces.append(len(batch))
        return original(self, batch)

    monkeypatch.setattr(type(model), "train_step", counted)
    return traces


@pytest.mark.parametrize("data", ["strings", "dataset"])
def test_fit_traces_its_training_step_once(data, monkeypatch):
    """``fit`` creates the optimizer's and the metrics' variables before it
    traces the training step; Keras alone creates them inside the first
    trace, and ``tf.function`` then traces the step again (two traces of the
    same batch spec before this was fixed)."""
    import tensorflow as tf

    if data == "strings":
        model = classifier()
        traces = count_traces(model, monkeypatch)
        model.compile()
        history = model.fit(list(TEXTS), LABELS, epochs=2, batch_size=4, verbose=0)
        steps = 2 * 2  # 8 texts in batches of 4, two epochs
    else:
        model = small_model()
        traces = count_traces(model, monkeypatch)
        model.compile()
        ids = np.random.default_rng(2).integers(2, 30, size=(8, 6)).astype("int32")
        data = tf.data.Dataset.from_tensor_slices((ids, np.array(LABELS))).batch(3)
        history = model.fit(data, epochs=2, shuffle=False, verbose=0)
        steps = 2 * 3  # 8 rows in batches of 3, two epochs
    assert len(traces) == 1, traces
    assert model.optimizer.built and np.isfinite(history.history["loss"]).all()
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == steps


def test_train_on_batch_traces_its_step_once(monkeypatch):
    model = small_model()
    traces = count_traces(model, monkeypatch)
    model.compile()
    ids = np.random.default_rng(3).integers(2, 30, size=(8, 6)).astype("int32")
    losses = [model.train_on_batch(ids, np.array(LABELS)) for _ in range(2)]
    assert len(traces) == 1, traces
    assert np.isfinite(losses).all()


def test_fit_takes_label_names_and_checks_labels():
    clf = classifier()
    clf.compile()
    names = [NAMES[i] for i in LABELS]
    by_name = clf.evaluate(TEXTS, names, verbose=0, return_dict=True)
    by_id = clf.evaluate(TEXTS, LABELS, verbose=0, return_dict=True)
    assert by_name == by_id
    with pytest.raises(ValueError, match=r"labels \['neutral'\] are not among the classifier's "
                                         r"label_names \['negative', 'positive'\]"):
        clf.fit(TEXTS, names[:-1] + ["neutral"], verbose=0)
    with pytest.raises(ValueError, match=r"class ids 0\.\.1 \(num_classes=2\), found 0\.\.2"):
        clf.fit(TEXTS, LABELS[:-1] + [2], verbose=0)


def test_saved_classifier_keeps_the_optimizer_that_trained_it(tmp_path):
    """The compile config in classifier.keras is the trained one (not the
    RMSprop of a bare Keras ``compile()``), and loading compiles with it
    without Keras' warnings about a custom ``compile()`` or a mismatched
    optimizer."""
    clf = classifier()
    clf.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.5))
    clf.fit(np.array(TEXTS, dtype=object), np.array(LABELS), epochs=1, verbose=0)
    path = os.path.join(tmp_path, "classifier.keras")
    clf.save(path)
    config = json.loads(zipfile.ZipFile(path).read("config.json"))
    assert config["compile_config"]["optimizer"]["class_name"] == "SGD"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = keras.saving.load_model(path)
    assert [str(w.message) for w in caught] == []
    assert isinstance(loaded.optimizer, keras.optimizers.SGD)
    assert loaded.optimizer.get_config()["momentum"] == 0.5
    assert loaded.loss.get_config()["from_logits"] is True
    x = np.array(TEXTS, dtype=object)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), clf.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)


def _run(code):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.parametrize("imports", [
    "import keras_posattn, keras", "import keras, keras_posattn",
    # Keras is first imported inside one of the package's own modules: the
    # registration waits for that module to finish (it once warned instead).
    "import keras_posattn.preprocessing, warnings; warnings.simplefilter('error')",
    "from keras_posattn.datasets import load_dataset"])
def test_import_keras_posattn_registers_every_serializable_class(tmp_path, imports):
    """After ``import keras_posattn`` alone, ``keras.saving.load_model`` loads
    a saved classifier, whichever of Keras and the package comes first; the
    registered classes are all those that importing every module registers."""
    path = os.path.join(tmp_path, "classifier.keras")
    clf = classifier()
    clf.save(path)
    out = _run(f"""import warnings
warnings.simplefilter("error", UserWarning)
{imports}
import json, pkgutil, importlib
import keras_posattn
import keras
model = keras.saving.load_model({path!r})
first = sorted(k for k in keras.saving.get_custom_objects() if k.startswith("keras_posattn>"))
for module in pkgutil.walk_packages(keras_posattn.__path__, "keras_posattn."):
    if module.name.split(".")[-1] not in ("cli", "__main__"):
        importlib.import_module(module.name)
every = sorted(k for k in keras.saving.get_custom_objects() if k.startswith("keras_posattn>"))
print(json.dumps([type(model).__name__, model.label_names, first, every]))
""")
    name, labels, first, every = json.loads(out.strip().splitlines()[-1])
    assert (name, labels) == ("TextClassifier", NAMES)
    assert first == every
    assert "keras_posattn>TextClassifier" in first and "keras_posattn>MPSAN" in first


def test_import_keras_posattn_alone_does_not_load_tensorflow():
    out = _run("import sys, keras_posattn; print('tensorflow' in sys.modules, 'keras' in sys.modules)")
    assert out.split() == ["False", "False"]
