"""The orchestration, tested on what it computes, not on its bookkeeping.

One path (``trainer.Run``) takes every run from data to a trained model:
``train``, ``tune``'s final training and each ``reproduce`` unit. These tests
make each of its decisions observable:

- the **test** split is what is scored: a test file whose labels are the
  training labels flipped, so a model that learned the task scores near 0
  there and near 1 on the dev split (a run that evaluated the dev split, or
  trained the baseline on the test split, cannot pass);
- ``fit`` trains with the recipe's learning-rate steps (each epoch's rate
  read from the optimizer) and keeps the weights of the best dev epoch;
- ``build_model`` compiles with every option of the recipe's optimizer;
- the default recipe, the dtype policy and ``result.json`` apply to a
  tuner's final training as to ``train``;
- Ctrl-C stops at the end of a batch, resumable, and the resumed run's
  history (and ``result.json``) holds every epoch.
"""

import dataclasses
import json
import os
import signal

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_posattn import tuning
from keras_posattn.training import trainer
from keras_posattn.training.recipe import Recipe
from keras_posattn.training.run_folder import RunFolder
from keras_posattn.training.settings import RunOptions
from keras_posattn.training.settings import TrainingError
from keras_posattn.training.settings import default_recipe_name
from keras_posattn.training.settings import resolve_settings
from keras_posattn.training.settings import settings_for

#: A small CNN that learns "good" vs "bad" in a few epochs.
KIM = dict(embedding_dim=16, filters=8)


def _rows(count, rng, flip=False):
    """``label<TAB>text``: the class is which of "good" / "bad" the text holds
    (flipped: the other one)."""
    filler = [f"w{i}" for i in range(20)]
    rows = []
    for i in range(count):
        label = i % 2
        words = list(rng.choice(filler, size=5))
        words.insert(int(rng.integers(0, 6)), ("good", "bad")[label])
        rows.append(f"{1 - label if flip else label}\t{' '.join(words)}\n")
    return "".join(rows)


@pytest.fixture(scope="module")
def flipped(tmp_path_factory):
    """Train and dev files of one task, and a test file with its labels flipped."""
    root = tmp_path_factory.mktemp("flipped")
    rng = np.random.default_rng(0)
    paths = {}
    for name, count, flip in (("train", 240, False), ("dev", 60, False), ("test", 60, True)):
        paths[name] = root / f"{name}.tsv"
        paths[name].write_text(_rows(count, rng, flip), encoding="utf-8")
    return paths


def _options(flipped, **changes):
    values = dict(model_name="kim_cnn_static", train_path=flipped["train"],
                  dev_path=flipped["dev"], test_path=flipped["test"], embeddings="none",
                  overrides=KIM, optimizer="adam", learning_rate=0.01, batch_size=16, epochs=4,
                  export=False, verbose=0)
    values.update(changes)
    return RunOptions(**values)


def _accuracy(classifier, path):
    """``classifier``'s accuracy on a labelled file, computed here."""
    rows = [line.split("\t", 1) for line in path.read_text(encoding="utf-8").splitlines()]
    logits = keras.ops.convert_to_numpy(
        classifier(tf.constant([text for _, text in rows]), training=False))
    return float(np.mean(logits.argmax(-1) == np.array([int(label) for label, _ in rows])))


def test_the_test_split_is_what_is_scored(flipped, tmp_path):
    result = trainer.Run(_options(flipped, output_dir=tmp_path / "run")).execute()
    # The model learned the task (the dev split agrees with training) ...
    assert max(result.history["val_accuracy"]) >= 0.9
    # ... so on the flipped test file it is nearly always wrong, and so is the
    # bag of words trained on the training split.
    assert result.test_accuracy <= 0.1 and result.baseline_accuracy <= 0.1
    # The number reported is the saved classifier's accuracy on the test file.
    classifier = keras.saving.load_model(tmp_path / "run" / "classifier.keras")
    assert result.test_accuracy == pytest.approx(_accuracy(classifier, flipped["test"]), abs=1e-6)
    assert _accuracy(classifier, flipped["dev"]) >= 0.9
    record = json.loads((tmp_path / "run" / "result.json").read_text())
    assert record["test_accuracy"] == result.test_accuracy
    assert record["data"] == str(flipped["train"])
    assert (tmp_path / "run" / "labels.txt").read_text().split() == ["0", "1"]


class _Recorder(keras.callbacks.Callback):
    """Each epoch's learning rate (as the optimizer has it during the epoch),
    weights and validation accuracy."""

    def __init__(self):
        super().__init__()
        self.rates, self.weights, self.val_accuracy = [], [], []

    def on_epoch_begin(self, epoch, logs=None):
        self.rates.append(float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate)))

    def on_epoch_end(self, epoch, logs=None):
        self.weights.append([np.array(w) for w in self.model.get_weights()])
        self.val_accuracy.append(logs["val_accuracy"])


def test_fit_steps_the_learning_rate_and_keeps_the_best_dev_epoch(flipped, tmp_path):
    options = _options(flipped, learning_rate=0.002)
    settings = settings_for(options)
    settings.recipe = settings.recipe.replace(epochs=4, lr_decay_epochs=[1, 3],
                                              lr_decay_factor=0.5, select_best=True)
    data = trainer.prepare_data(settings, options)
    keras.utils.set_random_seed(3)
    model = trainer.build_model(settings, data)
    recorder = _Recorder()
    trainer.fit(model, data, settings.recipe, tmp_path / "run", callbacks=[recorder], verbose=0)
    # Milestones are 0-based epochs: the rate drops when epoch 1 and epoch 3 begin.
    assert recorder.rates == pytest.approx([0.002, 0.001, 0.001, 0.0005])
    # The weights kept are those of the first epoch with the best dev accuracy.
    best = int(np.argmax(recorder.val_accuracy))
    for kept, at_best in zip(model.get_weights(), recorder.weights[best]):
        np.testing.assert_array_equal(kept, at_best)


def test_build_model_compiles_with_the_presets_optimizer():
    """A recipe's weight EMA (here 0.999 on mpsan_released's, whose released
    code keeps one it never reads, so the preset has none) and HCAN's Adam
    beta_2 0.99 reach the compiled optimizer."""
    options = RunOptions(model_name="mpsan_released", demo_size=40, overrides={"embedding_dim": 8})
    settings = resolve_settings("mpsan_released", demo=False, overrides=options.overrides)
    data = trainer.prepare_data(settings, options)
    assert not trainer.build_model(settings, data).optimizer.use_ema
    settings = dataclasses.replace(settings, recipe=settings.recipe.replace(ema=0.999))
    optimizer = trainer.build_model(settings, data).optimizer
    assert optimizer.use_ema and optimizer.ema_momentum == pytest.approx(0.999)
    hcan = resolve_settings("hcan", demo=False)
    assert hcan.recipe.make_optimizer().beta_2 == pytest.approx(0.99)


def test_the_default_recipe_rule():
    """On files with the 50d GloVe vectors a preset's 50d recipe, else the
    paper's; the embedded task trains with the demo settings."""
    assert default_recipe_name("mpsan", demo=False) == "50d"
    assert default_recipe_name("mpsan", demo=False, embeddings="none") == "paper"
    assert default_recipe_name("mpsan", demo=True) == "paper"
    assert default_recipe_name("kim_cnn_static", demo=False) == "paper"  # no 50d table
    on_files = RunOptions(model_name="mpsan", train_path="t.tsv")
    assert settings_for(on_files).recipe_name == "50d"
    assert settings_for(dataclasses.replace(on_files, recipe="paper")).recipe_name == "paper"
    assert settings_for(RunOptions(model_name="mpsan")).recipe_name == "demo"


def test_an_unknown_option_names_itself():
    with pytest.raises(TypeError, match="epoch"):
        trainer.train("mpsan", epoch=3)


def test_tune_trains_the_best_configuration_through_the_same_run(tmp_path, monkeypatch):
    """--train-best goes through Run: the search's settings (overrides,
    batch size), the best trial's learning rate, the recipe's dtype policy,
    the test split, result.json and the export."""
    runs = []
    real = trainer.Run.execute

    def execute(self):
        runs.append(self)
        return real(self)

    monkeypatch.setattr(trainer.Run, "execute", execute)
    monkeypatch.setattr(Recipe, "dtype_policy", lambda self: ("mixed_bfloat16", "the test's"))
    tuning.tune("kim_cnn_static", max_trials=1, epochs=1, directory=tmp_path / "search",
                train_best=True, best_epochs=1, log=lambda *a: None, demo_size=200,
                overrides=KIM, batch_size=32, export_dir=tmp_path / "sm")
    (run,) = runs
    assert run.options.overrides == KIM | {"dropout": run.options.overrides["dropout"]}
    assert run.settings.recipe.batch_size == 32 and run.settings.recipe.epochs == 1
    assert run.settings.recipe.learning_rate == pytest.approx(run.options.learning_rate)
    record = json.loads((tmp_path / "search" / "kim_cnn_static" / "best" /
                         "result.json").read_text())
    assert record["recipe_name"] == "demo" and record["dtype_policy"] == "mixed_bfloat16"
    assert keras.mixed_precision.global_policy().name == "float32"  # put back
    assert 0.0 <= record["test_accuracy"] <= 1.0 and record["epochs_run"] == 1
    assert (tmp_path / "sm" / "kim_cnn_static" / "1" / "saved_model.pb").exists()


class _CtrlC(keras.callbacks.Callback):
    """Press Ctrl-C (SIGINT to this process) after the first batch of ``epoch``."""

    def __init__(self, epoch):
        super().__init__()
        self.epoch, self.current = epoch, None

    def on_epoch_begin(self, epoch, logs=None):
        self.current = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.current == self.epoch and batch == 0:
            os.kill(os.getpid(), signal.SIGINT)


def test_ctrl_c_stops_at_a_clean_point_and_the_resumed_run_keeps_every_epoch(flipped, tmp_path):
    options = dict(output_dir=tmp_path / "run", epochs=3, learning_rate=0.002)
    handler = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        trainer.Run(_options(flipped, callbacks=[_CtrlC(epoch=1)], **options)).execute()
    run = tmp_path / "run"
    # Stopped in epoch 1, after epoch 0's checkpoints: resumable, unlocked.
    assert (run / "backup").exists() and (run / "checkpoints" / "last.keras").exists()
    first = json.loads((run / "history.json").read_text())
    assert sorted(first) == ["0"]
    assert not (run / ".lock").exists() and not (run / "result.json").exists()
    # The handler is put back: Ctrl-C outside training interrupts as usual.
    assert signal.getsignal(signal.SIGINT) is handler

    result = trainer.Run(_options(flipped, resume=True, **options)).execute()
    assert result.epochs_run == 3 and len(result.history["val_accuracy"]) == 3
    assert result.history["loss"][0] == pytest.approx(first["0"]["loss"])
    record = json.loads((run / "result.json").read_text())
    assert record["epochs_run"] == 3 and record["history"] == result.history


class _EpochCount(keras.callbacks.Callback):
    epochs = 0

    def on_epoch_end(self, epoch, logs=None):
        self.epochs += 1


def test_a_run_cut_short_after_training_is_not_trained_again(flipped, tmp_path, monkeypatch):
    """Killed while it is scored, a run keeps its training: the weights it
    trained to are in ``trained.npz`` before the backup goes, so the resumed
    run trains no epoch and scores those weights. Before, the backup went at
    the end of training and the run started over from its first epoch."""
    options = dict(output_dir=tmp_path / "run", epochs=3, learning_rate=0.002)
    real_evaluate, scored = trainer.evaluate, []

    def killed_while_scoring(*args, **kwargs):
        scored.append(real_evaluate(*args, **kwargs))
        raise KeyboardInterrupt("killed while scoring")

    monkeypatch.setattr(trainer, "evaluate", killed_while_scoring)
    with pytest.raises(KeyboardInterrupt):
        trainer.Run(_options(flipped, **options)).execute()
    run = RunFolder(tmp_path / "run")
    assert run.trained.exists() and not run.backup.exists() and not run.result_path.exists()
    assert run.interrupted() and run.resumed_epoch() == 3
    first = run.read_history()
    with pytest.raises(TrainingError, match="interrupted run .trained, not yet scored"):
        trainer.Run(_options(flipped, **options)).execute()  # neither resume nor overwrite

    monkeypatch.setattr(trainer, "evaluate", real_evaluate)
    count = _EpochCount()
    resumed = trainer.Run(_options(flipped, resume=True, callbacks=[count], projector=True,
                                   **options)).execute()
    assert count.epochs == 0  # nothing trained again
    assert (run.logs / "projector" / "metadata.tsv").exists()  # as a run that trains
    assert (resumed.test_accuracy, resumed.baseline_accuracy) == scored[0]
    assert resumed.epochs_run == 3
    assert resumed.history["val_accuracy"] == [first[e]["val_accuracy"] for e in range(3)]
    # Finished: the record is written and the trained weights are gone.
    assert run.finished() and not run.trained.exists()


# One self-attention and max pooling a level: the test is about the document
# batches, not the block (a run took 22 s with the paper's block, 9 s so).
HCAN_SMALL = dict(embedding_dim=16, units=16, num_heads=2, self_attentions=1, pooling="max")


@pytest.mark.parametrize("model_name, overrides, at_epoch", [
    ("kim_cnn_static", KIM, 1),
    ("kim_cnn_static", KIM, 2),
    ("hcan", HCAN_SMALL, 1),  # documents: DocumentPreprocessor's batches
])
def test_a_resumed_run_trains_as_the_uninterrupted_run(flipped, tmp_path, model_name,
                                                       overrides, at_epoch):
    """Interrupted in epoch ``at_epoch`` and resumed, a run ends where the same
    run without the interruption ends: the epochs after the resume see the
    same data order (tf.data's seeded reshuffle draws a new order per
    iterator, afresh in a new process) and the same dropout masks (the seed
    generators are not among the weights Keras's backup saves). Without
    either, the losses after the resume differ."""
    options = dict(model_name=model_name, epochs=3, learning_rate=0.002,
                   overrides=overrides | {"dropout": 0.5})
    straight = trainer.Run(_options(flipped, output_dir=tmp_path / "straight", **options))
    straight = straight.execute()
    with pytest.raises(KeyboardInterrupt):
        trainer.Run(_options(flipped, output_dir=tmp_path / "resumed",
                             callbacks=[_CtrlC(epoch=at_epoch)], **options)).execute()
    resumed = trainer.Run(_options(flipped, output_dir=tmp_path / "resumed", resume=True,
                                   **options)).execute()
    assert len(straight.history["loss"]) == 3
    assert resumed.history == straight.history  # every epoch's loss and dev scores
    assert resumed.test_accuracy == straight.test_accuracy


def test_a_resumed_multi_worker_run_trains_as_the_uninterrupted_run(flipped, tmp_path,
                                                                    monkeypatch):
    """The multi-worker path (a repeated training set, one Keras iterator for
    every epoch, ``distribute.shard_steps``) resumes where the uninterrupted
    run was too: the resumed iterator skips the finished epochs' batches.
    Run here in one process under the default strategy, which hands each
    global batch whole to the one worker: the same stream the workers of a
    multi-worker strategy split between them (tests/test_distribute.py).
    Without the skip, the resumed epochs read the first epochs' batches."""
    monkeypatch.setattr(trainer.distribute, "num_workers", lambda strategy: 2)
    options = dict(epochs=3, learning_rate=0.002, overrides=KIM | {"dropout": 0.5})
    straight = trainer.Run(_options(flipped, output_dir=tmp_path / "straight", **options))
    straight = straight.execute()
    with pytest.raises(KeyboardInterrupt):
        trainer.Run(_options(flipped, output_dir=tmp_path / "resumed",
                             callbacks=[_CtrlC(epoch=1)], **options)).execute()
    resumed = trainer.Run(_options(flipped, output_dir=tmp_path / "resumed", resume=True,
                                   **options)).execute()
    assert len(straight.history["loss"]) == 3
    assert resumed.history == straight.history
    assert resumed.test_accuracy == straight.test_accuracy


class _Determinism(keras.callbacks.Callback):
    """Whether TensorFlow's deterministic kernels are on while ``fit`` runs."""

    seen = None

    def on_train_begin(self, logs=None):
        self.seen = trainer.op_determinism()


def test_deterministic_kernels_are_on_for_the_run_only(flipped, tmp_path):
    """``deterministic=True`` turns TensorFlow's deterministic kernels on while
    the run trains (process-wide, TensorFlow has no other scope) and back off
    afterwards, also after Ctrl-C; ``result.json`` records which way it ran.
    (That it makes CPU reruns repeat is measured on real data in
    BENCHMARKS.md, "Deterministic reruns".)"""
    before = trainer.op_determinism()
    trainer.set_op_determinism(False)
    try:
        for deterministic in (True, False):
            probe, run = _Determinism(), tmp_path / f"run-{deterministic}"
            trainer.Run(_options(flipped, output_dir=run, epochs=1, deterministic=deterministic,
                                 callbacks=[probe])).execute()
            assert probe.seen is deterministic and trainer.op_determinism() is False
            record = json.loads((run / "result.json").read_text(encoding="utf-8"))
            assert record["deterministic"] is deterministic
        probe = _Determinism()
        with pytest.raises(KeyboardInterrupt):
            trainer.Run(_options(flipped, output_dir=tmp_path / "stopped", epochs=2,
                                 deterministic=True, callbacks=[probe, _CtrlC(epoch=1)])).execute()
        assert probe.seen is True and trainer.op_determinism() is False
    finally:
        trainer.set_op_determinism(before)


def test_the_replayed_shuffles_follow_the_installed_keras():
    """Keras 3.6's ``fit`` makes one iterator of a training set of known length
    an epoch, Keras 3.7 and later two (read in their ``EpochIterator``); the
    installed Keras's count is the one the test above relies on."""
    from keras_posattn.training.callbacks import iterators_per_epoch

    assert iterators_per_epoch("3.6.0") == 1
    assert [iterators_per_epoch(v) for v in ("3.7.0", "3.15.1", "4.0.0")] == [2, 2, 2]
    assert iterators_per_epoch() == iterators_per_epoch(keras.version())


def test_a_resumed_run_with_a_moving_average_trains_as_the_uninterrupted_run(
        flipped, tmp_path, monkeypatch):
    """ema with select_best: the average is swapped into the model over each
    epoch's end for the selection; the backup is written before that swap
    (raw weights, and the optimizer with its average), so a run interrupted
    in epoch 1 resumes both and ends where the straight run ends, with the
    average of its best dev epoch."""
    real = trainer.settings_for

    def settings_for(options):
        settings = real(options)
        return dataclasses.replace(
            settings, recipe=settings.recipe.replace(ema=0.9, select_best=True))

    monkeypatch.setattr(trainer, "settings_for", settings_for)
    options = dict(epochs=3, learning_rate=0.002, overrides=KIM | {"dropout": 0.5})
    straight = trainer.Run(_options(flipped, output_dir=tmp_path / "straight", **options))
    assert straight.settings.recipe.ema == 0.9
    straight = straight.execute()
    with pytest.raises(KeyboardInterrupt):
        trainer.Run(_options(flipped, output_dir=tmp_path / "resumed",
                             callbacks=[_CtrlC(epoch=1)], **options)).execute()
    resumed = trainer.Run(_options(flipped, output_dir=tmp_path / "resumed", resume=True,
                                   **options)).execute()
    assert resumed.history == straight.history
    assert resumed.test_accuracy == straight.test_accuracy


def test_a_resumed_run_selects_and_counts_patience_over_every_epoch(tmp_path):
    """The recipe's selection (``EarlyStopping``) continues across an
    interruption: the best epoch before it stays the best, the patience counts
    the epochs on both sides, and its weights are the ones restored. Keras's
    ``BackupAndRestore`` alone would restart the selection with the resumed
    epochs (here: stop never, keep epoch 3's weights)."""
    from keras_posattn.training.callbacks import SelectionState

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    recipe = Recipe(epochs=10, select_best=True, early_stopping=2)

    def set_weights(value):
        model.set_weights([np.full((2, 1), value, "float32"), np.zeros(1, "float32")])

    def start(resume):
        selection = recipe.selection_callback()
        callbacks = keras.callbacks.CallbackList(
            [selection, SelectionState(selection, tmp_path / "backup", resume=resume)],
            model=model)
        model.stop_training = False
        callbacks.on_train_begin()
        return selection, callbacks

    _, first = start(resume=False)
    for epoch, (accuracy, value) in enumerate([(0.6, 1.0), (0.9, 2.0)]):
        set_weights(value)
        first.on_epoch_end(epoch, {"val_accuracy": accuracy})
    # interrupted after epoch 1; the resumed run starts at epoch 2
    selection, resumed = start(resume=True)
    set_weights(3.0)
    resumed.on_epoch_end(2, {"val_accuracy": 0.7})
    assert not model.stop_training
    set_weights(4.0)
    resumed.on_epoch_end(3, {"val_accuracy": 0.8})
    assert model.stop_training  # two epochs without a better dev accuracy than epoch 1's
    resumed.on_train_end()
    assert selection.best_epoch == 1 and selection.best == pytest.approx(0.9)
    np.testing.assert_allclose(model.get_weights()[0], 2.0)
    # a run that is not resumed starts its selection afresh
    fresh, callbacks = start(resume=False)
    assert fresh.best is None and fresh.wait == 0
