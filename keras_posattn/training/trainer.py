"""The one path from data to a trained model.

``Run(options).execute()`` takes a ``RunOptions`` (every option named) to a
finished run folder, in stages that are public functions:

1. ``settings.settings_for``: the preset's config and recipe (the default
   recipe, the demo settings on the embedded task, the options' overrides);
2. ``data.prepare_data``: the splits (files, a benchmark set by name, or the
   embedded default task), the family's preprocessor built on the training
   texts, pretrained word vectors for its vocabulary;
3. ``build_model``: the zoo model at the data's sizes (classes, vocabulary,
   max length, vector width), vectors loaded, compiled with the recipe's
   optimizer, under the run's tf.distribute strategy and dtype policy;
4. ``fit``: the recipe's schedule and model selection, TensorBoard logs,
   attention heat-maps, a checkpoint every epoch, resumption;
5. ``evaluate`` on the **test** split beside a bag-of-words baseline, then the
   ``classifier.keras`` (strings in, logits out), the SavedModel export and
   ``result.json``.

``train(model_name, **options)`` is ``Run(RunOptions(model_name=...,
**options)).execute()``; ``keras_posattn.tuning.tune`` (the best
configuration's training) and ``keras_posattn.reproduce.reproduce`` (each
run) go through the same ``Run``. Every stage uses only the model contract
(``keras_posattn.models.base``): nothing here knows a family's name or its
arguments.
"""

import dataclasses
import shutil
import sys
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from keras_posattn import zoo
from keras_posattn.training import distribute
from keras_posattn.training.data import PreparedData  # noqa: F401
from keras_posattn.training.data import prepare_data
from keras_posattn.training.run_folder import RunFolder
from keras_posattn.training.run_folder import prepare_output_dir  # noqa: F401
from keras_posattn.training.settings import RECIPES  # noqa: F401
from keras_posattn.training.settings import RunOptions
from keras_posattn.training.settings import Settings  # noqa: F401
from keras_posattn.training.settings import TrainingError
from keras_posattn.training.settings import parse_overrides  # noqa: F401
from keras_posattn.training.settings import resolve_settings  # noqa: F401
from keras_posattn.training.settings import settings_for

__all__ = [
    "PreparedData", "RECIPES", "Run", "RunOptions", "Settings", "TrainResult", "TrainingError",
    "build_model", "compile_model", "evaluate", "fit", "float32_copy", "parse_overrides",
    "prepare_data", "prepare_output_dir", "resolve_settings", "train",
]


@dataclasses.dataclass
class TrainResult:
    model_name: str
    test_accuracy: float
    baseline_accuracy: float
    epochs_run: int
    output_dir: Path
    export_dir: Path = None
    sample_text: str = None
    sample_prediction: dict = None
    history: dict = None
    #: What ``result.json`` holds (settings, data, versions...).
    record: dict = None


def _log(message):
    print(message, flush=True)


# --- the model ------------------------------------------------------------------


def build_model(settings, data, overrides=None, compile=True, strategy=None):
    """The zoo model at the data's sizes, pretrained vectors loaded, compiled
    (under ``strategy``'s scope when given).

    The contract arguments come from the data: ``num_classes`` (its classes),
    ``vocabulary_size`` and ``max_length`` (and ``max_sentences`` for
    documents: its preprocessor's ``model_sizes()``) and, with
    pretrained vectors, ``embedding_dim``. ``overrides`` (e.g. a tuner's
    hyperparameters) replace the settings' config.
    """
    if strategy is not None:
        with strategy.scope():
            model = build_model(settings, data, overrides, compile)
        return distribute.adapt_model(model)
    config = dict(settings.config)
    config.update({k: v for k, v in (overrides or {}).items() if v is not None})
    config.update(
        num_classes=len(data.label_names),
        vocabulary_size=data.preprocessor.vocabulary_size,
        **data.preprocessor.model_sizes(),
    )
    if data.vectors is not None:
        config["embedding_dim"] = int(data.vectors.matrix.shape[1])
    elif config.get("trainable_embeddings") == "none":
        # Frozen random vectors would never learn anything.
        config["trainable_embeddings"] = "all"
    try:
        model = zoo.build(settings.model_name, **config)
    except TypeError as e:
        raise TrainingError(str(e)) from None
    if data.vectors is not None:
        model.embedding.set_pretrained(data.vectors.matrix, data.vectors.pretrained)
    settings.recipe.apply_coupled_weight_decay(model)
    if compile:
        compile_model(model, settings.recipe)
    return model


def compile_model(model, recipe):
    """Compile with the recipe's optimizer (every option of it: EMA, weight
    decay, clipping, betas), cross-entropy on logits and accuracy."""
    model.compile(
        optimizer=recipe.make_optimizer(),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
        jit_compile=recipe.jit_compile,
    )


def float32_copy(model):
    """``model`` itself if it computes in float32, else a float32 copy with its
    weights (compiled for evaluation): what ``classifier.keras`` and the
    export get after mixed-precision training, so that serving never depends
    on the training machine's bfloat16 support."""
    if model.compute_dtype == "float32":
        return model
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("float32")
    try:
        copy = type(model).from_config(model.get_config())
    finally:
        keras.mixed_precision.set_global_policy(previous)
    copy.embedding.match_variables(model.embedding)
    copy.set_weights(model.get_weights())
    copy.compile_from_config(model.get_compile_config())
    return copy


# --- fit and evaluate -------------------------------------------------------------


def _sharded(dataset, num_workers, key, start_epoch=0):
    """``(dataset, {key: steps})``: with several workers, a repeated set and
    the steps of an epoch (``distribute.shard_steps``; ``start_epoch``: the
    epochs a resumed run has finished)."""
    if num_workers <= 1:
        return dataset, {}
    dataset, steps = distribute.shard_steps(dataset, num_workers, start_epoch)
    return dataset, {key: steps}


def fit(model, data, recipe, output_dir, seed=1234, callbacks=None, verbose=None, resume=False,
        num_workers=1, projector=False):
    """Train with the recipe's callbacks (learning-rate steps, early stopping
    and best-epoch selection on the dev split), TensorBoard logs, attention
    images and per-epoch checkpoints; returns Keras' ``History`` holding
    every epoch of the run (on ``resume``, the interrupted run's too; the
    early stopping and best-epoch selection then continue over every epoch,
    ``callbacks.SelectionState``, and the data order and dropout masks are
    the uninterrupted run's, ``callbacks.RandomState``).

    The vocabulary and class names are written to ``output_dir``; on
    ``resume`` the vocabulary must match the interrupted run's. Ctrl-C stops
    at the end of a batch with ``KeyboardInterrupt``, the run resumable.
    When training ends, the weights it keeps go to the folder's
    ``trained.npz`` before the backup is removed: a run cut short after that
    (while it is scored or saved) is not trained again on ``resume``, its
    weights and history are loaded instead.
    With ``num_workers > 1`` (a multi-worker strategy) each epoch is one
    pass over the training set, every worker taking its part of each batch.
    With ``projector``, the trained word embedding is written for
    TensorBoard's projector (``logs/projector``).
    """
    from keras_posattn.training.callbacks import ClassifierCheckpoint
    from keras_posattn.training.callbacks import CleanInterrupt
    from keras_posattn.training.callbacks import EpochHistory
    from keras_posattn.training.callbacks import RandomState
    from keras_posattn.training.callbacks import SelectionState
    from keras_posattn.training.callbacks import replay_shuffles
    from keras_posattn.training.callbacks import tensorboard_callbacks

    folder = RunFolder(output_dir)
    folder.checkpoint.parent.mkdir(parents=True, exist_ok=True)
    folder.write_vocabulary(data.preprocessor, data.label_names, resume=resume)
    if resume and folder.trained.exists():  # cut short after training: not trained again
        folder.load_trained(model)
        history = keras.callbacks.History()
        history.history = EpochHistory(folder, resume=True).history()
        _log(f"Resume: the run had trained ({len(history.history.get('loss', []))} epochs); "
             f"its weights come from {folder.trained}.")
        return _with_projector(history, projector, folder, model, data)
    _log(f"TensorBoard: tensorboard --logdir {folder.logs}")
    finished = folder.resumed_epoch() if resume else 0
    train_ds, train_steps = _sharded(
        data.batches("train", recipe.batch_size, recipe.buckets, seed=seed), num_workers,
        "steps_per_epoch", start_epoch=finished)
    if finished and num_workers <= 1:  # a repeated, multi-worker set skips them instead
        replay_shuffles(train_ds, finished)
    dev_ds, dev_steps = _sharded(data.batches("dev", recipe.batch_size, recipe.buckets),
                                 num_workers, "validation_steps")
    epochs = EpochHistory(folder, resume=resume)
    recipe_callbacks = recipe.callbacks()
    selection = [SelectionState(c, folder.backup, resume=resume) for c in recipe_callbacks
                 if isinstance(c, keras.callbacks.EarlyStopping)]
    with CleanInterrupt() as interrupt:
        history = model.fit(
            train_ds, validation_data=dev_ds, epochs=int(recipe.epochs),
            callbacks=[
                # The checkpoints first: what follows an epoch's end sees it saved.
                keras.callbacks.BackupAndRestore(str(folder.backup), save_freq="epoch",
                                                 delete_checkpoint=False),
                ClassifierCheckpoint(data.preprocessor, data.label_names, folder.checkpoint),
                epochs,
                RandomState(folder.backup, resume=resume),
                keras.callbacks.TensorBoard(log_dir=str(folder.logs)),
                *tensorboard_callbacks(model, data, folder.logs),
                *recipe_callbacks,
                *selection,  # after the selection it carries across a resume
                *(callbacks or []),
                interrupt,
            ],
            verbose=(1 if sys.stdout.isatty() else 2) if verbose is None else verbose,
            shuffle=False,  # the dataset shuffles itself, seeded
            **train_steps, **dev_steps,
        )
    history.history = epochs.history()
    # The trained weights first, then the backup goes: cut short from here on
    # (scoring a long test split, saving), the run resumes without training.
    folder.save_trained(model)
    shutil.rmtree(folder.backup, ignore_errors=True)
    return _with_projector(history, projector, folder, model, data)


def _with_projector(history, projector, folder, model, data):
    """``history``; with ``projector``, the trained word embedding written
    for TensorBoard's projector first."""
    if projector:
        from keras_posattn.training.tensorboard import write_projector

        write_projector(folder.logs / "projector", model, data.preprocessor.vocabulary)
    return history


def evaluate(model, data, recipe, num_workers=1, seed=1234):
    """``(test accuracy, bag-of-words accuracy)`` on the data's **test**
    split: the model's, and a unigram logistic regression's trained on the
    training split with the same words (``baselines``)."""
    from keras_posattn.baselines import bag_of_words_baseline

    test = data.splits.test
    test_ds, steps = _sharded(data.batches("test", recipe.batch_size, recipe.buckets),
                              num_workers, "steps")
    _, accuracy = model.evaluate(test_ds, verbose=0, **steps)
    baseline = bag_of_words_baseline(
        data.splits.train.texts, data.splits.train.labels, test.texts, test.labels,
        seed=seed, tokenizer=data.preprocessor.tokenize,
    )
    return float(accuracy), float(baseline)


# --- the run --------------------------------------------------------------------


class Run:
    """One training run: ``RunOptions`` in, a finished run folder out.

    ``settings`` are resolved at once; ``data`` is prepared on first use
    (``tuning.tune`` searches on it before training the best configuration
    with ``Run(options, data=the same data)``). ``execute()`` trains,
    evaluates on the test split, saves, exports and writes ``result.json``;
    it returns a ``TrainResult`` and leaves the global dtype policy as it
    found it.
    """

    def __init__(self, options, data=None):
        self.options = options
        self.settings = settings_for(options)
        self._data = data

    @property
    def data(self):
        if self._data is None:
            self._data = prepare_data(self.settings, self.options)
        return self._data

    def execute(self):
        previous = keras.mixed_precision.global_policy()
        determinism = op_determinism()
        try:
            return self._execute(time.time())
        finally:
            # Leave the process as we found it (tests and notebooks train again).
            keras.mixed_precision.set_global_policy(previous)
            set_op_determinism(determinism)

    def _execute(self, started):
        o = self.options
        # A tf.distribute strategy must exist before TensorFlow runs an operation.
        strategy = distribute.make_strategy(o.strategy)
        workers = distribute.num_workers(strategy)
        self._set_dtype_policy()
        folder, export = self._open_folder(workers)
        try:
            return self._train(folder, export, strategy, workers, started)
        finally:
            folder.close()

    def _train(self, folder, export, strategy, workers, started):
        o, settings = self.options, self.settings
        keras.utils.set_random_seed(o.seed)
        if o.deterministic:
            set_op_determinism(True)
            _log("Deterministic ops: on (a rerun of this seed on this machine repeats it).")
        data = self.data
        model = build_model(settings, data, strategy=strategy)
        if strategy is not None:
            _log(f"Strategy: {type(strategy).__name__}, {strategy.num_replicas_in_sync} "
                 f"replicas, {workers} worker(s).")
        _log(f"Model: {settings.describe()}\n"
             f"  {model.count_params():,} parameters; {settings.recipe_name} recipe: "
             + ", ".join(f"{k}={v}" for k, v in settings.recipe.as_dict().items()
                         if v is not None and k != "embeddings"))
        history = fit(model, data, settings.recipe, folder.path, seed=o.seed,
                      callbacks=o.callbacks, verbose=o.verbose, resume=o.resume,
                      num_workers=workers, projector=o.projector)
        shipped = float32_copy(model)
        if shipped is not model and strategy is not None:
            distribute.adapt_model(shipped)
        result = self._evaluate(shipped, history, folder, workers)
        self._save(shipped, result, folder, export)
        result.record = self._record(model, result, time.time() - started)
        folder.write_result(result.record)
        return result

    def _set_dtype_policy(self):
        policy, why = self.options.dtype_policy, "--dtype-policy"
        if not policy:
            policy, why = self.settings.recipe.dtype_policy()
        if policy:
            keras.mixed_precision.set_global_policy(policy)
            _log(f"Precision: {policy} ({why}).")
        elif self.settings.recipe.mixed_bfloat16 == "auto":
            _log(f"Precision: float32 ({why}).")

    def _open_folder(self, workers):
        """``(RunFolder, whether to export)``; several workers train with one
        batch shape and no XLA, and only the chief writes the run folder."""
        o = self.options
        path, export = Path(o.output_dir or Path("runs") / o.model_name), o.export
        if workers > 1:
            self.settings.recipe = self.settings.recipe.replace(buckets=False, jit_compile=False)
            if not distribute.is_chief():
                path = path.with_name(f"{path.name}.worker{distribute.task()[1]}")
                export = False
        return RunFolder(path).open(resume=o.resume, overwrite=o.overwrite), export

    def _evaluate(self, model, history, folder, workers):
        data = self.data
        accuracy, baseline = evaluate(model, data, self.settings.recipe, workers, self.options.seed)
        _log(f"\nTest accuracy: {self.options.model_name} {accuracy:.4f} | bag-of-words "
             f"baseline {baseline:.4f} | chance {1.0 / len(data.label_names):.4f}  "
             f"({len(data.splits.test)} test texts)")
        return TrainResult(
            model_name=self.options.model_name, test_accuracy=accuracy,
            baseline_accuracy=baseline, epochs_run=len(history.history.get("loss", [])),
            output_dir=folder.path,
            history={k: [float(x) for x in v] for k, v in history.history.items()},
        )

    def _save(self, model, result, folder, export):
        """``classifier.keras``; with ``export``, the SavedModel, reloaded to
        predict the sample text."""
        from keras_posattn.models import TextClassifier

        data, name = self.data, self.options.model_name
        classifier = TextClassifier(data.preprocessor, model, label_names=data.label_names,
                                    name=f"{name}_text")
        classifier.save(folder.path / "classifier.keras")
        _log(f"Saved {folder.path / 'classifier.keras'} (strings in, logits out).")
        if not export:
            return
        from keras_posattn.export import ExportedModel
        from keras_posattn.export import export_saved_model

        trained_with = {"embeddings": data.vectors_name}
        if data.vectors_info:
            trained_with["embeddings_info"] = data.vectors_info
        result.export_dir = export_saved_model(classifier, name=name,
                                               base_dir=self.options.export_dir,
                                               metadata={"trained_with": trained_with})
        _log(f"Exported SavedModel: {result.export_dir}")
        sample_text = self.options.sample_text or data.splits.sample_text
        if sample_text:
            prediction = ExportedModel(result.export_dir).predict([sample_text])
            label = str(prediction["label"][0])
            probability = float(prediction["probabilities"][0].max())
            result.sample_text = sample_text
            result.sample_prediction = {"label": label, "probability": probability}
            _log(f"Reloaded export predicts {label!r} (p={probability:.3f}) for: "
                 f"{sample_text!r}")

    def _record(self, model, result, seconds):
        """What ``result.json`` holds."""
        from keras_posattn.utils import machine

        splits, o = self.data.splits, self.options
        record = {k: v for k, v in dataclasses.asdict(result).items() if k != "record"}
        record.update(
            output_dir=str(result.output_dir),
            export_dir=str(result.export_dir) if result.export_dir else None,
            config=model.get_config(),
            recipe=self.settings.recipe.as_dict(),
            recipe_name=self.settings.recipe_name,
            dtype_policy=model.dtype_policy.name,
            deterministic=op_determinism(),
            machine=machine(),
            data=splits.description,
            dataset=splits.name,
            fold=splits.fold,
            num_folds=splits.num_folds,
            phrases=bool(o.phrases),
            embeddings=self.data.vectors_name,
            embeddings_info=self.data.vectors_info,
            tokenizer=type(self.data.preprocessor).__name__,
            seconds=round(seconds, 1),
            versions={"tensorflow": tf.__version__, "keras": keras.__version__,
                      "numpy": np.__version__},
        )
        return record


def op_determinism():
    """Whether TensorFlow runs its deterministic kernels (``deterministic``,
    or ``TF_DETERMINISTIC_OPS=1`` in the environment)."""
    # TensorFlow has a public switch on (enable_op_determinism), not a public
    # reader or switch off; these two are the functions behind it.
    from tensorflow.python.framework import config

    return bool(config.is_op_determinism_enabled())


def set_op_determinism(enabled):
    """Turn TensorFlow's deterministic kernels on or off (process-wide)."""
    from tensorflow.python.framework import config

    if enabled:
        config.enable_op_determinism()
    else:
        config.disable_op_determinism()


def train(model_name, **options):
    """Train a zoo model end to end: ``Run(RunOptions(model_name=model_name,
    **options)).execute()`` (see the module docstring); returns a
    ``TrainResult``.

    Options (``RunOptions``; an unknown one is a ``TypeError`` naming it):
        train_path, test_path, dev_path: labelled text files (TSV, CSV,
            JSONL). Without ``train_path`` or ``dataset`` the embedded default
            task is used, with the preset's smaller ``demo`` settings.
        dataset: a benchmark set by name (``keras_posattn.datasets.
            known_datasets()``), read from ``data_dir`` (default: the
            ``KERAS_POSATTN_DATA`` variable); ``fold`` picks the test fold of
            a cross-validated set, ``phrases`` trains on SST's phrases.
        embeddings: ``"glove-6b-50d"``, a path to a GloVe/word2vec text file,
            or ``"none"``. Default: the recipe's vectors (``glove-6b-50d``,
            offline) when training on files, none on the embedded task.
        epochs, batch_size, learning_rate, optimizer: override the recipe.
        max_length: tokens kept per text (default: the longest training text,
            capped at 400); max_sentences: sentences per document
            (hierarchical models); max_tokens: vocabulary size cap, PAD and
            [UNK] included (default: the recipe's; 0: every training word).
        standardize: the text standardisation (``keras_posattn.preprocessing.
            STANDARDIZE_OPTIONS``; default ``"lower_and_split_punctuation"``:
            punctuation a word boundary) or ``"none"``.
        overrides: dict of model constructor arguments.
        output_dir: run folder (default ``runs/<model_name>``).
        export_dir: SavedModel base folder (``<export_dir>/<model>/<version>``).
        export: whether to export a SavedModel at the end.
        resume: continue an interrupted run in ``output_dir``.
        overwrite: discard an interrupted run in ``output_dir`` and start over.
        seed: fixes data order, splits and initialisation.
        demo_size: number of training examples of the embedded task.
        sample_text: sentence whose prediction is printed after export.
        dtype_policy: e.g. ``"mixed_bfloat16"`` or ``"float32"``; default: the
            recipe's (``Recipe.mixed_bfloat16``). Restored afterwards; the
            saved classifier and the export are float32 either way.
        deterministic: run TensorFlow's deterministic kernels
            (``tf.config.experimental.enable_op_determinism``), so that a
            rerun of the same seed on the same machine and versions repeats
            the run to the bit (without it, float32 CPU runs drift apart in
            the last digits from the first epoch); possibly slower. Restored
            afterwards; ``result.json`` records whether it was on (also when
            ``TF_DETERMINISTIC_OPS=1`` turned it on).
        verbose: Keras fit verbosity (default: progress bar on a terminal,
            one line per epoch otherwise).
        callbacks: extra Keras callbacks for ``fit``.
        projector: write the trained word embedding for TensorBoard's projector.
        recipe: ``"paper"`` (the paper's protocol) or ``"50d"`` (the preset's
            settings tuned for 50d GloVe); default: ``"50d"`` when training on
            files with the 50d vectors and the preset has one, else ``"paper"``.
        strategy: ``"mirrored"`` (this machine's devices) or ``"multi_worker"``
            (the cluster in ``TF_CONFIG``); see ``keras_posattn.training.distribute``.
    """
    return Run(RunOptions(model_name=model_name, **options)).execute()
