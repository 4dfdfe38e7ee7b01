"""KerasTuner searches over zoo models, logged to TensorBoard's HParams dashboard.

A search is a ``ZooHyperModel`` per model family (``keras_posattn.hypermodel``):
the family-specific spaces live in the repository's top-level ``tuning/``
folder (shipped as ``keras_posattn._tuning``), one file per family, for users
to read and edit. ``searches()`` loads them and checks every model argument a
space returns against the family's constructor (an unknown key is a
``SearchSpaceError`` naming the file and the close matches), as presets are
checked. A family without a file gets the learning rate and the dropout rate.

``tune`` resolves its settings and data through the trainer's ``Run`` (the
same default recipe, data setup and preprocessor as ``train``), searches, and
trains the best configuration through ``Run`` too (dtype policy, the test
split, ``result.json``, the export). ``run_search`` makes the tuner
(``random``, ``bayesian`` or ``hyperband``), writes the HParams experiment
(hyperparameters and the validation metrics) to
``<directory>/<project>/logs``, and searches with a TensorBoard callback that
KerasTuner points at one folder per trial (``logs/<trial>/execution0``) and
pairs with the trial's hyperparameters. An interrupted search resumes
(``overwrite=False``). Distributed search uses KerasTuner's own chief/worker
mode: run the same command on every machine with ``KERASTUNER_TUNER_ID``
(``chief`` on one, ``tuner0``, ``tuner1``... on the others),
``KERASTUNER_ORACLE_IP`` and ``KERASTUNER_ORACLE_PORT`` set.
"""

import dataclasses
import difflib
import functools
import importlib
import inspect
import os
from pathlib import Path

import keras
import keras_tuner
from keras_tuner.engine import hyperparameters as hp_types

from keras_posattn import hypermodel as hypermodel_lib
from keras_posattn import zoo
from keras_posattn.hypermodel import ZooHyperModel  # noqa: F401
from keras_posattn.hypermodel import format_value
from keras_posattn.hypermodel import register_search  # noqa: F401
from keras_posattn.registry import PresetError
from keras_posattn.registry import builder_arguments
from keras_posattn.training.settings import TUNERS

OBJECTIVE = "val_accuracy"
SEARCH_PACKAGE = "keras_posattn._tuning"

__all__ = [
    "OBJECTIVE", "SearchSpaceError", "TUNERS", "ZooHyperModel", "best_trials", "check_space",
    "hparams_domain", "hypermodel_for", "make_tuner", "overrides_of", "register_search",
    "run_search", "searches", "tune", "write_hparams_experiment",
]


class SearchSpaceError(PresetError):
    """A search space under ``tuning/`` returns an argument its family's
    constructor does not take."""


def check_space(family, cls):
    """Declare ``cls``'s space at its defaults (the family's constructor
    defaults) and check every model argument it returns against the
    family's constructor."""
    families = zoo.families()
    where = f"tuning/{inspect.getmodule(cls).__name__.rsplit('.', 1)[-1]}.py"
    if family not in families:
        raise SearchSpaceError(f"{where}: {cls.__name__} searches unknown family {family!r}; "
                               f"known families: {sorted(families)}.")
    probe = cls.__new__(cls)
    probe._defaults = hypermodel_lib.defaults_of(families[family])
    known = builder_arguments(families[family])
    for key in probe.space(keras_tuner.HyperParameters()):
        if key not in known:
            close = difflib.get_close_matches(key, known, n=3)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            raise SearchSpaceError(
                f"{where}: {cls.__name__}.space returns {key!r}, which the {family!r} "
                f"constructor does not take.{hint} Known: {', '.join(known)}.")


@functools.lru_cache(maxsize=None)
def _load_searches():
    importlib.import_module(SEARCH_PACKAGE)
    for family, cls in hypermodel_lib.SEARCHES.items():
        check_space(family, cls)
    return True


def searches():
    """Family name -> registered ``ZooHyperModel`` class (loaded and checked
    on first use)."""
    _load_searches()
    return dict(hypermodel_lib.SEARCHES)


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


def hparams_domain(hp, hparams_api):
    """A KerasTuner hyperparameter's values as a TensorBoard HParams domain:
    a choice (and a stepped range) is discrete, an unstepped range an
    interval."""
    if isinstance(hp, hp_types.Choice):
        return hparams_api.Discrete(list(hp.values))
    if isinstance(hp, hp_types.Boolean):
        return hparams_api.Discrete([True, False])
    if isinstance(hp, hp_types.Fixed):
        return hparams_api.Discrete([hp.value])
    if isinstance(hp, hp_types.Int):
        if hp.step not in (None, 1):
            return hparams_api.Discrete(list(range(hp.min_value, hp.max_value + 1, hp.step)))
        return hparams_api.IntInterval(int(hp.min_value), int(hp.max_value))
    if isinstance(hp, hp_types.Float):
        if hp.step is not None:
            count = int(round((hp.max_value - hp.min_value) / hp.step)) + 1
            return hparams_api.Discrete([float(hp.min_value + i * hp.step) for i in range(count)])
        return hparams_api.RealInterval(float(hp.min_value), float(hp.max_value))
    raise TypeError(f"Unknown KerasTuner hyperparameter type: {type(hp).__name__}.")


def write_hparams_experiment(tuner, log_dir):
    """The HParams dashboard's experiment: every hyperparameter of the space
    with its domain, and the validation metrics each trial logs."""
    import tensorflow as tf
    from tensorboard.plugins.hparams import api as hparams_api

    hparams = [hparams_api.HParam(hp.name, hparams_domain(hp, hparams_api))
               for hp in tuner.oracle.get_space().space]
    metrics = [
        hparams_api.Metric("epoch_accuracy", group="validation", display_name="validation accuracy"),
        hparams_api.Metric("epoch_loss", group="validation", display_name="validation loss"),
        hparams_api.Metric("epoch_accuracy", group="train", display_name="training accuracy"),
    ]
    Path(log_dir).mkdir(parents=True, exist_ok=True)
    with tf.summary.create_file_writer(str(log_dir)).as_default():
        hparams_api.hparams_config(hparams=hparams, metrics=metrics)


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
    tuner.search(train, validation_data=dev, epochs=epochs, verbose=verbose,
                 callbacks=[keras.callbacks.TensorBoard(log_dir=str(log_dir))])
    return tuner


def best_trials(tuner, count=5):
    """``[(trial_id, score, {hyperparameter: value}), ...]``, best first."""
    trials = tuner.oracle.get_best_trials(num_trials=count)
    return [(t.trial_id, t.score, dict(t.hyperparameters.values)) for t in trials]


def overrides_of(hypermodel, hyperparameters):
    """The model arguments and recipe changes a trial's hyperparameters mean
    (declaring the space again returns the trial's values)."""
    hp = keras_tuner.HyperParameters()
    if isinstance(hyperparameters, keras_tuner.HyperParameters):
        hyperparameters = hyperparameters.values
    hp.values.update(dict(hyperparameters))
    return hypermodel.trial(hp)


def tune(model_name, *, tuner="random", max_trials=5, epochs=3, directory="tuning_runs",
         project=None, overwrite=False, train_best=False, best_epochs=None, verbose=0,
         log=print, **options):
    """Search ``model_name``'s family space on the given data (the embedded
    default task without files); print the best trials; with ``train_best``,
    train the best configuration (``best_epochs``, default the recipe's)
    through the trainer's ``Run`` and export it.

    ``options`` are the trainer's ``RunOptions`` (the data, ``overrides``
    fixing model arguments outside the space, ``recipe``, ``batch_size``,
    ``seed``, ``export_dir``...); ``epochs`` are each trial's.

    Returns ``(tuner, best)``: the KerasTuner tuner and ``best_trials(tuner)``.
    """
    from keras_posattn.training import trainer
    from keras_posattn.training.settings import RunOptions
    from keras_posattn.training.settings import check_number

    check_number("max_trials", max_trials, 1)
    check_number("epochs", epochs, 1)
    if best_epochs is not None:
        check_number("best_epochs", best_epochs, 1)
    options = RunOptions(model_name=model_name, verbose=verbose, **options)
    run = trainer.Run(options)
    keras.utils.set_random_seed(options.seed)
    hypermodel = hypermodel_for(model_name, run.data, settings=run.settings)
    search = run_search(hypermodel, kind=tuner, max_trials=max_trials, epochs=epochs,
                        directory=directory, project_name=project, overwrite=overwrite,
                        seed=options.seed, verbose=verbose, log=log)
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
        best_options = dataclasses.replace(
            options, overrides={**(options.overrides or {}), **overrides},
            epochs=best_epochs, output_dir=Path(directory) / (project or model_name) / "best",
            overwrite=True, **recipe)
        trainer.Run(best_options, data=run.data).execute()
    return search, best
