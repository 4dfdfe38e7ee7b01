"""KerasTuner searches over zoo models, logged to TensorBoard's HParams dashboard.

A search is a ``keras_tuner.HyperModel`` per model family, written in the style
of KerasTuner's ``applications``: the fixed facts (the model name, the data and
its preprocessor, hence classes and vocabulary) go to ``__init__``; the space is
declared in ``build(hp)`` with the paper's value (the preset's) as each
default; ``build`` compiles; and the model is built by the trainer's
``build_model`` stage, never by a copy of it.

The family-specific spaces live in the repository's top-level ``tuning/``
folder (shipped as ``keras_posattn._tuning``), one file per family, for users
to read and edit: a ``ZooHyperModel`` subclass registered with
``@register_search("<family>")`` whose ``space(hp)`` returns model arguments.
Every search also tunes the learning rate and the dropout rate. A family
without a file gets those two.

``run_search`` makes the tuner (``random``, ``bayesian`` or ``hyperband``),
writes the HParams experiment (hyperparameters and the validation metrics) to
``<directory>/<project>/logs``, and searches with a TensorBoard callback that
KerasTuner points at one folder per trial (``logs/<trial>/execution0``) and
pairs with the trial's hyperparameters. An interrupted search resumes
(``overwrite=False``). Distributed search uses KerasTuner's own chief/worker
mode: run the same command on every machine with ``KERASTUNER_TUNER_ID``
(``chief`` on one, ``tuner0``, ``tuner1``... on the others),
``KERASTUNER_ORACLE_IP`` and ``KERASTUNER_ORACLE_PORT`` set.
"""

import importlib
import math
import os
from pathlib import Path

import keras
import keras_tuner

from keras_posattn import zoo

TUNERS = ("random", "bayesian", "hyperband")
OBJECTIVE = "val_accuracy"
SEARCH_PACKAGE = "keras_posattn._tuning"

_SEARCHES = {}


def register_search(family):
    """Class decorator: the search space of a model family."""

    def decorator(cls):
        _SEARCHES[family] = cls
        cls.family = family
        return cls

    return decorator


def searches():
    """Family name -> registered ``ZooHyperModel`` class."""
    importlib.import_module(SEARCH_PACKAGE)
    return dict(_SEARCHES)


class ZooHyperModel(keras_tuner.HyperModel):
    """A zoo model family's search space (see the module docstring).

    Args:
        model_name: the zoo preset the search starts from (its values are the
            defaults of the space).
        data: the trainer's ``PreparedData`` (splits, preprocessor, vectors).
        settings: the trainer's ``Settings`` for ``model_name``; None resolves
            them (file settings, or demo settings when ``data`` is the
            embedded task).
        batch_size: batch size of the trials (default: the recipe's).

    Subclasses override ``space(hp)``; they never build models themselves.
    """

    family = None

    def __init__(self, model_name, data, settings=None, batch_size=None, name=None):
        from keras_posattn.training import trainer

        preset = zoo.get_preset(model_name)
        if self.family is not None and preset["family"] != self.family:
            raise ValueError(
                f"{type(self).__name__} searches {self.family!r} models, not {model_name!r} "
                f"(family {preset['family']!r})."
            )
        if settings is None:
            demo = data.splits.description.startswith("embedded")
            settings = trainer.resolve_settings(model_name, demo=demo)
        self.model_name = model_name
        self.data = data
        self.settings = settings
        self.batch_size = int(batch_size or settings.recipe.batch_size)
        self._defaults = _defaults(settings)
        super().__init__(name=name or f"search_{model_name}", tunable=True)

    def default(self, key):
        """The preset's value of a model argument (the family's default if the
        preset does not set it)."""
        return self._defaults.get(key)

    def space(self, hp):
        """Family-specific model arguments for this trial (none here)."""
        return {}

    def common_space(self, hp):
        """Learning rate (log scale, a decade either side of the recipe's) and
        dropout rate, for every family."""
        lr = float(self.settings.recipe.learning_rate)
        learning_rate = hp.Float("learning_rate", lr / 10, lr * 10, sampling="log", default=lr)
        dropout = hp.Float("dropout", 0.0, 0.6, step=0.05,
                           default=round(float(self.default("dropout") or 0.0) * 20) / 20)
        return {"dropout": dropout}, {"learning_rate": learning_rate}

    def build(self, hp):
        from keras_posattn.training import trainer

        overrides, recipe = self.common_space(hp)
        overrides.update(self.space(hp))
        settings = trainer.Settings(
            self.settings.model_name, self.settings.preset, dict(self.settings.config),
            self.settings.recipe.replace(**recipe), self.settings.demo,
        )
        return trainer.build_model(settings, self.data, overrides)

    def datasets(self, seed=1234):
        """The (train, validation) datasets every trial fits on."""
        pre, splits = self.data.preprocessor, self.data.splits
        bucket = self.settings.recipe.buckets
        return (
            pre.dataset(splits.train.texts, splits.train.labels, self.batch_size,
                        shuffle_seed=seed, buckets=bucket),
            pre.dataset(splits.dev.texts, splits.dev.labels, self.batch_size, buckets=bucket),
        )

    def fit(self, hp, model, *args, **kwargs):
        """Fit on the data's own datasets unless others are given; add the
        attention images and the model graph to the trial's TensorBoard folder."""
        from keras_posattn.training.tensorboard import ModelGraph

        if not args and "x" not in kwargs:
            train, dev = self.datasets()
            args = (train,)
            kwargs.setdefault("validation_data", dev)
        who = os.environ.get("KERASTUNER_TUNER_ID", "this process")
        shown = ", ".join(f"{k}={format_value(v)}" for k, v in sorted(hp.values.items()))
        print(f"Trial on {who}: {shown}", flush=True)
        callbacks = list(kwargs.pop("callbacks", None) or [])
        for callback in list(callbacks):
            if isinstance(callback, keras.callbacks.TensorBoard):
                images = attention_images(model, self.data, callback.log_dir)
                callbacks += [images, ModelGraph(callback.log_dir, images.token_ids)]
        kwargs.setdefault("shuffle", False)
        return model.fit(*args, callbacks=callbacks, **kwargs)


def attention_images(model, data, log_dir, count=3):
    """The ``AttentionImages`` callback for a fixed sample of validation texts."""
    from keras_posattn.training.attention_images import AttentionImages

    pre = data.preprocessor
    inputs = keras.ops.convert_to_numpy(pre(data.splits.dev.texts[:count]))
    return AttentionImages(str(log_dir), model.attention_maps, inputs,
                           [pre.display_tokens(row) for row in inputs])


def _defaults(settings):
    """Model arguments of the preset, over the family's signature defaults."""
    import inspect

    family = zoo.families()[settings.preset["family"]]
    params = inspect.signature(family.__init__).parameters
    values = {n: p.default for n, p in params.items() if p.default is not inspect.Parameter.empty}
    values.update(settings.config)
    return values


def hypermodel_for(model_name, data, settings=None, batch_size=None):
    """The registered search of ``model_name``'s family (the base one if none)."""
    family = zoo.get_preset(model_name)["family"]
    cls = searches().get(family, ZooHyperModel)
    return cls(model_name, data, settings=settings, batch_size=batch_size)


def make_tuner(kind, hypermodel, directory, project_name, max_trials=10, epochs=3,
               overwrite=False, seed=1234, executions_per_trial=1):
    """A KerasTuner tuner maximising validation accuracy."""
    if kind not in TUNERS:
        raise ValueError(f"Unknown tuner {kind!r}; choose one of {', '.join(TUNERS)}.")
    common = dict(objective=OBJECTIVE, directory=str(directory), project_name=project_name,
                  overwrite=overwrite, seed=seed)
    if kind == "random":
        return keras_tuner.RandomSearch(hypermodel, max_trials=max_trials,
                                        executions_per_trial=executions_per_trial, **common)
    if kind == "bayesian":
        return keras_tuner.BayesianOptimization(hypermodel, max_trials=max_trials,
                                                executions_per_trial=executions_per_trial, **common)
    # Hyperband's budget is epochs, not trials: max_epochs per model.
    return keras_tuner.Hyperband(hypermodel, max_epochs=max(2, epochs), factor=3,
                                 executions_per_trial=executions_per_trial, **common)


def write_hparams_experiment(tuner, log_dir):
    """The HParams dashboard's experiment: every hyperparameter of the space
    with its domain, and the validation metrics each trial logs."""
    import tensorflow as tf
    from tensorboard.plugins.hparams import api as hparams_api
    from keras_tuner.src.engine import tuner_utils

    hyperparameters = tuner.oracle.get_space()
    converted = tuner_utils.convert_hyperparams_to_hparams(hyperparameters, hparams_api)
    metrics = [
        hparams_api.Metric("epoch_accuracy", group="validation", display_name="validation accuracy"),
        hparams_api.Metric("epoch_loss", group="validation", display_name="validation loss"),
        hparams_api.Metric("epoch_accuracy", group="train", display_name="training accuracy"),
    ]
    Path(log_dir).mkdir(parents=True, exist_ok=True)
    with tf.summary.create_file_writer(str(log_dir)).as_default():
        hparams_api.hparams_config(hparams=list(converted), metrics=metrics)


def is_worker():
    """True in a distributed search's worker process (not the chief)."""
    tuner_id = os.environ.get("KERASTUNER_TUNER_ID")
    return tuner_id is not None and tuner_id != "chief"


def run_search(hypermodel, kind="random", max_trials=10, epochs=3, directory="tuning_runs",
               project_name=None, overwrite=False, seed=1234, verbose=0, log=print):
    """Search, log every trial to TensorBoard, and return the tuner.

    The search resumes from ``<directory>/<project_name>`` unless ``overwrite``.
    """
    project_name = project_name or hypermodel.model_name
    tuner = make_tuner(kind, hypermodel, directory, project_name, max_trials=max_trials,
                       epochs=epochs, overwrite=overwrite, seed=seed)
    log_dir = Path(directory) / project_name / "logs"
    log(f"Search: {Path(directory) / project_name} ({kind}, {max_trials} trials, "
        f"{epochs} epochs each)\nTensorBoard: tensorboard --logdir {log_dir}")
    if not is_worker():
        write_hparams_experiment(tuner, log_dir)
    train, dev = hypermodel.datasets(seed=seed)
    search_kwargs = dict(validation_data=dev, epochs=epochs, verbose=verbose,
                         callbacks=[keras.callbacks.TensorBoard(log_dir=str(log_dir))])
    tuner.search(train, **search_kwargs)
    return tuner


def best_trials(tuner, count=5):
    """``[(trial_id, score, {hyperparameter: value}), ...]``, best first."""
    trials = tuner.oracle.get_best_trials(num_trials=count)
    return [(t.trial_id, t.score, dict(t.hyperparameters.values)) for t in trials]


def overrides_of(hypermodel, hyperparameters):
    """The model arguments and recipe changes a trial's hyperparameters mean
    (declaring the space again returns the trial's values)."""
    hp = keras_tuner.HyperParameters()
    values = hyperparameters.values if hasattr(hyperparameters, "values") else hyperparameters
    hp.values.update(dict(values))
    overrides, recipe = hypermodel.common_space(hp)
    overrides.update(hypermodel.space(hp))
    return overrides, recipe


def format_value(value):
    if isinstance(value, float):
        return f"{value:.4g}" if not math.isnan(value) else "nan"
    return str(value)


def tune(model_name, train_path=None, test_path=None, dev_path=None, embeddings=None,
         max_length=None, max_tokens=None, standardize="lower_and_split_punctuation", seed=1234,
         demo_size=None, tuner="random", max_trials=5, epochs=3, batch_size=None,
         directory="tuning_runs", project=None, overwrite=False, train_best=False,
         best_epochs=None, export_dir="saved_models", overrides=None, verbose=0, log=print,
         dataset=None, data_dir=None, fold=None, phrases=False, max_sentences=None):
    """Search ``model_name``'s family space on the given data (the embedded
    default task without files); print the best trials; with ``train_best``,
    train the best configuration through the trainer's stages and export it.

    ``overrides`` fix model arguments outside the search space.

    Returns ``(tuner, best)``: the KerasTuner tuner and ``best_trials(tuner)``.
    """
    from keras_posattn.training import trainer

    keras.utils.set_random_seed(seed)
    demo = train_path is None and dataset is None
    settings = trainer.resolve_settings(model_name, demo=demo, overrides=overrides,
                                        batch_size=batch_size)
    data = trainer.prepare_data(
        settings, train_path, test_path, dev_path, embeddings=embeddings, max_length=max_length,
        max_tokens=max_tokens, standardize=standardize, seed=seed, demo_size=demo_size,
        dataset=dataset, data_dir=data_dir, fold=fold, phrases=phrases,
        max_sentences=max_sentences,
    )
    hypermodel = hypermodel_for(model_name, data, settings=settings)
    search = run_search(hypermodel, kind=tuner, max_trials=max_trials, epochs=epochs,
                        directory=directory, project_name=project, overwrite=overwrite,
                        seed=seed, verbose=verbose, log=log)
    if is_worker():
        log("Worker done: the chief holds the results.")
        return search, []
    best = best_trials(search)
    log("\nBest trials (validation accuracy):")
    for rank, (trial_id, score, values) in enumerate(best, start=1):
        shown = ", ".join(f"{k}={format_value(v)}" for k, v in sorted(values.items()))
        log(f"  {rank}. trial {trial_id}: {format_value(score)}  {shown}")
    if train_best and best:
        overrides, recipe = overrides_of(hypermodel, best[0][2])
        log(f"\nTraining the best configuration: {overrides} {recipe}")
        best_settings = trainer.Settings(
            settings.model_name, settings.preset, {**settings.config, **overrides},
            settings.recipe.replace(epochs=best_epochs, **recipe), settings.demo,
        )
        output_dir = trainer.prepare_output_dir(
            Path(directory) / (project or model_name) / "best", overwrite=True)
        model = trainer.build_model(best_settings, data)
        history = trainer.fit(model, data, best_settings.recipe, output_dir, seed=seed,
                              verbose=verbose)
        trainer.finish(best_settings, model, data, history, output_dir,
                       export_dir=export_dir, seed=seed)
    return search, best
