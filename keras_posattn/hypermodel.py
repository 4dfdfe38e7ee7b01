"""A model family's KerasTuner search space: ``ZooHyperModel``.

The spaces themselves live in the repository's top-level ``tuning/`` folder
(shipped as ``keras_posattn._tuning``), one file per family: a
``ZooHyperModel`` subclass registered with ``@register_search("<family>")``
whose ``space(hp)`` declares hyperparameters, with the preset's values as
defaults (``self.default(key)``), and returns model arguments.
``keras_posattn.tuning`` loads them and checks every key a space returns
against the family's constructor, as presets are checked.

Written in the style of KerasTuner's ``applications``: the fixed facts (the
model name, the data and its preprocessor, hence classes and vocabulary) go
to ``__init__``; ``build(hp)`` compiles; and the model is built by the
trainer's ``build_model`` stage, never by a copy of it.
"""

import dataclasses
import inspect
import os

import keras
import keras_tuner

from keras_posattn import zoo
from keras_posattn.registry import constructor_defaults

#: Family name -> its registered ``ZooHyperModel`` subclass.
SEARCHES = {}


def register_search(family):
    """Class decorator: the search space of a model family."""

    def decorator(cls):
        SEARCHES[family] = cls
        cls.family = family
        return cls

    return decorator


def format_value(value):
    """A hyperparameter's value as the logs print it."""
    if isinstance(value, float):
        return f"{value:.4g}" if value == value else "nan"
    return str(value)


class ZooHyperModel(keras_tuner.HyperModel):
    """A zoo model family's search space (see the module docstring).

    Args:
        model_name: the zoo preset the search starts from (its values are the
            defaults of the space).
        data: the trainer's ``PreparedData`` (splits, preprocessor, vectors).
        settings: the trainer's ``Settings`` for ``model_name`` (the run's
            resolved preset and recipe); None resolves them (file settings,
            or demo settings when ``data`` is the embedded task).
        batch_size: batch size of the trials (default: the recipe's).

    Subclasses override ``space(hp)``; they never build models themselves.
    Every search also tunes the learning rate and the dropout rate
    (``common_space``).
    """

    family = None

    def __init__(self, model_name, data, settings=None, batch_size=None, name=None):
        from keras_posattn.training.settings import resolve_settings

        preset = zoo.get_preset(model_name)
        if self.family is not None and preset["family"] != self.family:
            raise ValueError(
                f"{type(self).__name__} searches {self.family!r} models, not {model_name!r} "
                f"(family {preset['family']!r})."
            )
        if settings is None:
            demo = data.splits.description.startswith("embedded")
            settings = resolve_settings(model_name, demo=demo)
        self.model_name = model_name
        self.data = data
        self.settings = settings
        self.batch_size = int(batch_size or settings.recipe.batch_size)
        self._defaults = defaults_of(settings.family, settings.config)
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
        dropout rate, for every family: ``(model arguments, recipe fields)``."""
        lr = float(self.settings.recipe.learning_rate)
        learning_rate = hp.Float("learning_rate", lr / 10, lr * 10, sampling="log", default=lr)
        dropout = hp.Float("dropout", 0.0, 0.6, step=0.05,
                           default=round(float(self.default("dropout") or 0.0) * 20) / 20)
        return {"dropout": dropout}, {"learning_rate": learning_rate}

    def trial(self, hp):
        """``(model arguments, recipe fields)`` of a trial's hyperparameters."""
        overrides, recipe = self.common_space(hp)
        overrides.update(self.space(hp))
        return overrides, recipe

    def build(self, hp):
        from keras_posattn.training.trainer import build_model

        overrides, recipe = self.trial(hp)
        settings = dataclasses.replace(self.settings, config=dict(self.settings.config),
                                       recipe=self.settings.recipe.replace(**recipe))
        return build_model(settings, self.data, overrides)

    def datasets(self, seed=1234):
        """The (train, validation) datasets every trial fits on."""
        buckets = self.settings.recipe.buckets
        return (self.data.batches("train", self.batch_size, buckets, seed=seed),
                self.data.batches("dev", self.batch_size, buckets))

    def fit(self, hp, model, *args, **kwargs):
        """Fit on the data's own datasets unless others are given; add the
        attention images and the model graph to the trial's TensorBoard folder;
        with the recipe's ``ema``, score the dev split on the weights' moving
        average, as a training run does (``Recipe.ema_callback``)."""
        from keras_posattn.training.callbacks import tensorboard_callbacks

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
                callbacks += tensorboard_callbacks(model, self.data, callback.log_dir)
        ema = self.settings.recipe.ema_callback()
        if ema is not None:
            callbacks.append(ema)
        kwargs.setdefault("shuffle", False)
        return model.fit(*args, callbacks=callbacks, **kwargs)


def defaults_of(family, config=None):
    """Model arguments of ``config`` (a preset's) over the family's
    constructor defaults."""
    values = {n: d for n, d in constructor_defaults(family).items()
              if d is not inspect.Parameter.empty}
    values.update(config or {})
    return values
