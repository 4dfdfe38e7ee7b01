"""What a training run is asked to do, and the preset resolved for it.

``RunOptions`` holds every option of a run by name (the keyword arguments of
``trainer.train`` and the flags of ``keras-posattn train``); ``settings_for``
resolves a zoo preset against them into ``Settings``: the model's
constructor arguments and the training ``Recipe``. The rule that picks the
default recipe lives here and nowhere else (``default_recipe_name``).

The values an option may take are named here too (``RECIPES``,
``STANDARDIZE``, ``STRATEGIES``, ``TUNERS``); this module imports neither
TensorFlow nor Keras at load, so the command line can offer them before
TensorFlow starts.
"""

import dataclasses
import json
import math
import numbers


class TrainingError(RuntimeError):
    """A problem with the user's run settings (printed without a traceback)."""


#: The recipes a preset can train with: the paper's protocol, or the settings
#: tuned on dev data for the 50d GloVe vectors (a preset's ``glove50d`` table).
RECIPES = ("paper", "50d")

#: The standardisations of the text preprocessors (``"none"``: the text as it is).
STANDARDIZE = ("lower_and_split_punctuation", "split_punctuation", "lower_and_strip_punctuation",
               "lower", "strip_punctuation", "none")

#: ``tf.distribute`` strategies (``training.distribute.make_strategy``).
STRATEGIES = ("default", "mirrored", "multi_worker")

#: KerasTuner's tuners (``tuning.make_tuner``).
TUNERS = ("random", "bayesian", "hyperband")

#: The vectors the 50d recipes were tuned for.
GLOVE_50D = "glove-6b-50d"

#: How texts become tokens (``RunOptions.tokenizer``): the words of the
#: standardised text, or WordPiece pieces learned on the training texts.
TOKENIZERS = ("words", "wordpiece")


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunOptions:
    """Every option of one training run, by name (see ``trainer.train``).

    Data: ``train_path``, ``test_path``, ``dev_path`` (labelled files) or
    ``dataset`` (a benchmark set by name, read from ``data_dir``, with
    ``fold`` and ``phrases``); neither: the embedded default task
    (``demo_size`` examples). ``embeddings``, ``max_length``,
    ``max_tokens``, ``max_sentences``, ``standardize``, ``tokenizer``: the
    preprocessor and the word vectors; ``unlabeled``: a file of more texts
    the in-domain vectors (``embeddings="domain..."``) also train on. ``seed`` fixes splits, data order and initialisation.

    Model and recipe: ``recipe`` (a name of ``RECIPES``; default:
    ``default_recipe_name``), ``overrides`` (constructor arguments),
    ``epochs``, ``batch_size``, ``learning_rate``, ``optimizer`` (recipe
    fields), ``dtype_policy``, ``deterministic``, ``strategy``.

    The run folder: ``output_dir`` (default ``runs/<model_name>``),
    ``resume``, ``overwrite``, ``export`` to ``export_dir``, ``sample_text``,
    ``projector``, ``verbose``, ``callbacks`` (extra Keras callbacks).
    """

    model_name: str
    train_path: object = None
    test_path: object = None
    dev_path: object = None
    dataset: str = None
    data_dir: object = None
    fold: int = None
    phrases: bool = False
    embeddings: str = None
    unlabeled: object = None
    tokenizer: str = "words"
    max_length: int = None
    max_tokens: int = None
    max_sentences: int = None
    standardize: str = "lower_and_split_punctuation"
    demo_size: int = None
    seed: int = 1234
    recipe: str = None
    overrides: dict = None
    epochs: int = None
    batch_size: int = None
    learning_rate: float = None
    optimizer: str = None
    dtype_policy: str = None
    deterministic: bool = False
    strategy: str = None
    output_dir: object = None
    export_dir: object = "saved_models"
    export: bool = True
    resume: bool = False
    overwrite: bool = False
    sample_text: str = None
    projector: bool = False
    verbose: int = None
    callbacks: list = None

    def __post_init__(self):
        for name, (minimum, whole, exclusive) in RANGES.items():
            value = getattr(self, name)
            if value is None or (name == "max_tokens" and type(value) is int and value == 0):
                continue  # max_tokens=0: every training word, over the recipe's cap
            check_number(name, value, minimum, whole, exclusive, ALSO_ALLOWED.get(name))

    @property
    def demo(self):
        """Whether the run trains on the embedded default task (no data given)."""
        return self.train_path is None and self.dataset is None

    @property
    def recipe_changes(self):
        """The recipe fields these options set (None: the recipe's value)."""
        return {"epochs": self.epochs, "batch_size": self.batch_size,
                "learning_rate": self.learning_rate, "optimizer": self.optimizer}


#: Numeric options: name -> (the bound, whole numbers only, the bound excluded).
RANGES = {
    "epochs": (1, True, False),
    "batch_size": (1, True, False),
    "learning_rate": (0, False, True),
    "max_length": (1, True, False),
    "max_tokens": (3, True, False),  # PAD, UNK and a word (or 0: every word)
    "max_sentences": (1, True, False),
    "demo_size": (20, True, False),  # a tenth held out for validation
    "fold": (0, True, False),
    "seed": (0, True, False),
}

#: What an option also takes besides the numbers in RANGES, for its error.
ALSO_ALLOWED = {"max_tokens": "or 0 (every word)"}


def check_number(name, value, minimum, whole=True, exclusive=False, also=None):
    """``value``, if it is a number (a whole one when ``whole``) at least
    ``minimum`` (above it when ``exclusive``); else a one-line
    ``TrainingError`` naming the option as the command line spells it (and
    ``also``, what else it takes, where given)."""
    kind = numbers.Integral if whole else numbers.Real
    fits = (isinstance(value, kind) and not isinstance(value, bool)
            and math.isfinite(value) and (value > minimum if exclusive else value >= minimum))
    if not fits:
        flag = "--" + name.replace("_", "-")
        raise TrainingError(f"{flag} must be {'a whole number' if whole else 'a number'} "
                            f"{'>' if exclusive else '>='} {minimum}{' ' + also if also else ''}, "
                            f"got {value!r}.")
    return value


#: The names ``RunOptions`` takes (the keyword arguments of ``trainer.train``).
RUN_OPTIONS = tuple(f.name for f in dataclasses.fields(RunOptions))


@dataclasses.dataclass(kw_only=True)
class Settings:
    """A preset resolved for one run: the model's constructor arguments
    (``config``) and its training ``recipe``."""

    model_name: str
    preset: dict
    config: dict
    recipe: object  # keras_posattn.training.recipe.Recipe
    demo: bool
    recipe_name: str = "paper"

    @property
    def family(self):
        from keras_posattn import zoo

        return zoo.families()[self.preset["family"]]

    def describe(self):
        """The preset's name and description, and where this run's constructor
        arguments depart from the preset's (the 50d recipe, the embedded demo or
        ``--set``): the description is the paper's model, the run may not be."""
        line = f"{self.model_name} ({self.preset.get('description', '')})"
        paper = self.preset.get("config", {})
        changed = {k: v for k, v in self.config.items() if k in paper and paper[k] != v}
        added = {k: v for k, v in self.config.items() if k not in paper}
        changes = {**changed, **added}
        if changes:
            line += "; this run: " + ", ".join(f"{k}={v!r}" for k, v in sorted(changes.items()))
        return line


def parse_overrides(pairs):
    """Turn ``["dropout=0.1", "branch_masks=[\\"bw\\"]"]`` into a dict (each
    value JSON if it parses, else a string)."""
    result = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise TrainingError(f"--set expects key=value, got {pair!r}.")
        key, value = pair.split("=", 1)
        try:
            result[key.strip()] = json.loads(value.strip())
        except json.JSONDecodeError:
            result[key.strip()] = value.strip()
    return result


#: What a ``--set`` value must be, by the type of the constructor's default.
_KINDS = (
    (bool, (bool,), "true or false"),
    (numbers.Integral, (numbers.Integral,), "a whole number"),
    (numbers.Real, (numbers.Real,), "a number"),
    (str, (str,), "a string"),
    ((list, tuple), (list, tuple), "a list"),
)


def check_overrides(model_name, family, overrides):
    """Each model argument of ``overrides`` (``--set key=value``) of the kind
    the family's constructor default is (a number for a number, a list for a
    list...; anything where the default is None); a one-line
    ``TrainingError`` naming the key, the kind wanted and the value given
    otherwise. Unknown keys are left to ``zoo.build``, which names them."""
    from keras_posattn.registry import constructor_defaults

    defaults = constructor_defaults(family)
    for key, value in (overrides or {}).items():
        default = defaults.get(key)
        if value is None or default is None or key not in defaults:
            continue
        for default_kind, accepted, wanted in _KINDS:
            if isinstance(default, default_kind):
                fits = isinstance(value, accepted) and (
                    default_kind is bool or not isinstance(value, bool))
                if not fits:
                    raise TrainingError(
                        f"--set {key}={json.dumps(value)}: {model_name}'s {key} takes {wanted} "
                        f"(default {json.dumps(default)}), got {type(value).__name__} "
                        f"{json.dumps(value)}.")
                break


def default_recipe_name(model_name, demo, embeddings=None):
    """The recipe a run uses when none is named: on files with the 50d GloVe
    vectors (the recipe's default vectors unless ``embeddings`` names
    others) or with in-domain vectors (``domain...``, alone or with GloVe),
    a preset's ``50d`` recipe, the one chosen on dev data for the vectors at
    hand; the paper's otherwise (the paper's own vectors, or none)."""
    from keras_posattn import zoo
    from keras_posattn.domain_vectors import parse_spec

    preset = zoo.get_preset(model_name)
    vectors = embeddings or preset.get("recipe", {}).get("embeddings")
    try:
        ours = vectors == GLOVE_50D or parse_spec(vectors) is not None
    except ValueError:  # a malformed domain spec: prepare_data says what is wrong
        ours = False
    return "50d" if (not demo and "glove50d" in preset and ours) else "paper"


def resolve_settings(model_name, demo, overrides=None, recipe_name="paper", **recipe_changes):
    """The preset's config and recipe for a run, with ``overrides`` (model
    arguments) and recipe fields applied.

    ``recipe_name``: ``"paper"`` (the preset's ``config`` and ``recipe``: the
    paper's protocol) or ``"50d"`` (the preset's ``glove50d`` table on top: the
    settings tuned on dev data for the 50d GloVe vectors available here). On the
    embedded task (``demo``) the preset's ``demo`` table applies instead.
    """
    from keras_posattn import zoo
    from keras_posattn.training.recipe import Recipe

    if recipe_name not in RECIPES:
        raise TrainingError(f"Unknown recipe {recipe_name!r}; choose one of {', '.join(RECIPES)}.")
    preset = zoo.get_preset(model_name)
    config = dict(preset.get("config", {}))
    recipe = dict(preset.get("recipe", {}))
    extra = {}
    if demo:
        extra = preset.get("demo", {})
    elif recipe_name == "50d":
        if "glove50d" not in preset:
            raise TrainingError(f"Preset {model_name!r} has no 50d recipe (a [glove50d] table); "
                                "use --recipe paper.")
        extra = preset["glove50d"]
    config.update(extra.get("config", {}))
    recipe.update(extra.get("recipe", {}))
    check_overrides(model_name, zoo.families()[preset["family"]], overrides)
    config.update({k: v for k, v in (overrides or {}).items() if v is not None})
    if preset.get("frozen_vectors") and config.get("trainable_embeddings") != "none":
        raise TrainingError(
            f"{model_name} keeps its pretrained vectors frozen (that is what the preset is); "
            f"trainable_embeddings={config['trainable_embeddings']!r} would make it another "
            "model: pick the non-static preset instead.")
    try:
        recipe = Recipe.from_dict(recipe, where=f"preset {model_name!r}").replace(**recipe_changes)
    except ValueError as e:
        raise TrainingError(str(e)) from None
    return Settings(model_name=model_name, preset=preset, config=config, recipe=recipe,
                    demo=demo, recipe_name=recipe_name if not demo else "demo")


def run_vectors(options, settings):
    """The vectors a run loads: ``options.embeddings`` where given, else the
    recipe's when training on files, none on the embedded task."""
    if options.embeddings is not None or settings.demo:
        return options.embeddings
    return settings.recipe.embeddings


def settings_for(options):
    """``resolve_settings`` for ``RunOptions``: their recipe (or the default
    one), overrides and recipe fields."""
    recipe_name = options.recipe or default_recipe_name(options.model_name, options.demo,
                                                        options.embeddings)
    return resolve_settings(options.model_name, demo=options.demo, overrides=options.overrides,
                            recipe_name=recipe_name, **options.recipe_changes)
