"""One registry for every model of the zoo, in the style of timm.

Model *families* register themselves: ``@register_family("mpsan")`` on the
class (``keras_posattn.models.mpsan.MPSAN``). Named *presets* - the paper's
model, the released-code variant, every ablation - are data: tables in the
TOML files of the repository's top-level ``zoo/`` folder, which is shipped
inside the package as ``keras_posattn._zoo`` (the one place presets are read
from). A preset names its family, its constructor arguments (``config``),
its training recipe (``recipe``), the smaller settings used on the embedded
default task (``demo``), the settings tuned for the 50d GloVe vectors at hand
(``glove50d``), a ``description`` and the paper's ``reported`` numbers;
``base = "<preset>"`` starts from another preset. ``description``,
``reported`` and ``frozen_vectors`` belong to the preset that states them and
are not inherited.

``frozen_vectors = true`` marks a preset whose identity is frozen pretrained
vectors (Kim's CNN-static, SPE-CNN's SingleCNN-static): its word vectors stay
frozen under every recipe. A recipe table it inherits that would train them
is overridden (``trainable_embeddings = "none"``); one it states itself is an
error, and so is ``--set trainable_embeddings=...`` (the trainer's check).

This module imports no model: ``keras_posattn.zoo`` imports the model
package (which registers the families) and re-exports what is here.
"""

import copy
import difflib
import fnmatch
import functools
import importlib.resources
import inspect
import tomllib

_FAMILIES = {}

#: Keys a preset table may hold.
PRESET_KEYS = ("family", "base", "paper", "description", "reported", "config", "recipe", "demo",
               "glove50d", "frozen_vectors")
#: Keys that describe one preset only and are not inherited through ``base``.
OWN_KEYS = ("description", "reported", "frozen_vectors")
#: The recipe tables whose ``config`` may set ``trainable_embeddings``
#: (the embedded task's ``demo`` has no pretrained vectors to keep frozen).
_VECTOR_TABLES = ("config", "glove50d")
#: Package holding the preset files (the repository's ``zoo/`` folder).
PRESET_PACKAGE = "keras_posattn._zoo"


class PresetError(ValueError):
    """A preset file names an unknown key, family or base."""


def register_family(name):
    """Class decorator: register a zoo model family under ``name``.

    The class gets ``family = name``; presets with ``family = "<name>"``
    build it.
    """

    def decorator(cls):
        if name in _FAMILIES and _FAMILIES[name] is not cls:
            raise ValueError(f"Model family {name!r} is registered twice.")
        _FAMILIES[name] = cls
        cls.family = name
        return cls

    return decorator


def families():
    """Registered family names -> classes."""
    return dict(_FAMILIES)


def constructor_defaults(cls):
    """A family class's constructor arguments, in order: name -> default
    (``inspect.Parameter.empty`` for an argument without one). The one place
    the zoo reads a constructor's signature."""
    params = inspect.signature(cls.__init__).parameters
    return {
        n: p.default for n, p in params.items()
        if n != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    }


def builder_arguments(cls):
    """Constructor argument names of a family class."""
    return list(constructor_defaults(cls))


@functools.lru_cache(maxsize=None)
def _raw_presets():
    presets = {}
    folder = importlib.resources.files(PRESET_PACKAGE)
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".toml"):
            continue
        source = f"zoo/{entry.name}"
        try:
            data = tomllib.loads(entry.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as e:
            raise PresetError(f"{source}: invalid TOML: {e}") from e
        for name, table in data.items():
            if name in presets:
                raise PresetError(f"{source}: preset {name!r} is defined twice.")
            unknown = sorted(set(table) - set(PRESET_KEYS))
            if unknown:
                raise PresetError(
                    f"{source}: preset {name!r} has unknown key(s) {unknown}; "
                    f"a preset holds {list(PRESET_KEYS)}."
                )
            table = dict(table)
            table["source"] = source
            presets[name] = table
    return presets


def _resolve(name, raw, seen=()):
    if name in seen:
        raise PresetError(f"Preset inheritance loop: {' -> '.join(seen + (name,))}")
    table = raw[name]
    base = table.get("base")
    if base is None:
        resolved = {"config": {}, "recipe": {}, "demo": {}}
    else:
        if base not in raw:
            raise PresetError(f"{table['source']}: preset {name!r} has unknown base {base!r}.")
        resolved = _resolve(base, raw, seen + (name,))
        for key in OWN_KEYS:
            resolved.pop(key, None)
    resolved = copy.deepcopy(resolved)
    _merge(resolved, {k: v for k, v in table.items() if k not in ("base", "source")})
    resolved["name"] = name
    resolved["source"] = table["source"]
    if table.get("frozen_vectors"):
        _keep_vectors_frozen(resolved, table)
    return resolved


def _keep_vectors_frozen(resolved, table):
    """A ``frozen_vectors`` preset: every recipe keeps ``trainable_embeddings
    = "none"``; an inherited table that says otherwise is overridden, the
    preset's own table may not."""
    for where in _VECTOR_TABLES:
        own = table.get(where, {})
        own = own.get("config", {}) if where != "config" else own
        if own.get("trainable_embeddings", "none") != "none":
            key = where if where == "config" else f"{where}.config"
            raise PresetError(
                f"{table['source']}: preset {resolved['name']!r} has frozen_vectors = true but "
                f"its {key} sets trainable_embeddings = {own['trainable_embeddings']!r}; a "
                "preset whose identity is frozen vectors keeps them frozen.")
        if where == "config":
            resolved["config"]["trainable_embeddings"] = "none"
        elif where in resolved:
            resolved[where].setdefault("config", {})["trainable_embeddings"] = "none"


def _merge(into, update):
    """Recursively merge tables; lists and values replace."""
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = copy.deepcopy(value)


def _check(preset):
    name, source = preset["name"], preset["source"]
    family = preset.get("family")
    if family not in _FAMILIES:
        raise PresetError(
            f"{source}: preset {name!r} names unknown family {family!r}; "
            f"known families: {sorted(_FAMILIES)}."
        )
    arguments = set(builder_arguments(_FAMILIES[family]))
    from keras_posattn.training.recipe import RECIPE_KEYS

    for where, table, known in (
        ("config", preset.get("config", {}), arguments),
        ("recipe", preset.get("recipe", {}), set(RECIPE_KEYS)),
        ("demo.config", preset.get("demo", {}).get("config", {}), arguments),
        ("demo.recipe", preset.get("demo", {}).get("recipe", {}), set(RECIPE_KEYS)),
        ("glove50d.config", preset.get("glove50d", {}).get("config", {}), arguments),
        ("glove50d.recipe", preset.get("glove50d", {}).get("recipe", {}), set(RECIPE_KEYS)),
    ):
        for key in table:
            if key not in known:
                close = difflib.get_close_matches(key, sorted(known), n=3)
                hint = f" Did you mean: {', '.join(close)}?" if close else ""
                raise PresetError(
                    f"{source}: preset {name!r} sets unknown {where} key {key!r}.{hint} "
                    f"Known: {', '.join(sorted(known))}."
                )
    for table in ("demo", "glove50d"):
        extra = set(preset.get(table, {})) - {"config", "recipe"}
        if extra:
            raise PresetError(f"{source}: preset {name!r}: {table} holds only config and recipe, "
                              f"not {sorted(extra)}.")


def _unknown_model(name, known):
    close = difflib.get_close_matches(name, known, n=5, cutoff=0.5)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    return ValueError(
        f"Unknown model {name!r}.{hint} Known models: {', '.join(known)}. "
        "(keras_posattn.zoo.list_models() lists them.)"
    )


def get_preset(name):
    """The resolved, checked preset: ``family``, ``config``, ``recipe``,
    ``demo``, ``description``, ``reported``, ``paper``, ``source``."""
    raw = _raw_presets()
    if name not in raw:
        raise _unknown_model(name, sorted(raw))
    preset = _resolve(name, raw)
    _check(preset)
    return preset


def list_models(pattern="*"):
    """Sorted names of the presets matching an fnmatch ``pattern``."""
    return sorted(n for n in _raw_presets() if fnmatch.fnmatch(n, pattern))


def build(name, num_classes=None, **overrides):
    """Build a zoo model by preset name, like ``timm.create_model``.

    With no other argument the model gets its family's defaults (5 classes
    as on SST-5, a 20,000-word vocabulary) and the preset's ``max_length``.

    Args:
        name: a preset name (see ``list_models()``).
        num_classes: number of classes (None: the family's default, 5).
        **overrides: constructor arguments replacing the preset's; ``None``
            values are dropped so the preset's values stay in force.

    Returns:
        The Keras model (weights created, untrained).
    """
    preset = get_preset(name)
    cls = _FAMILIES[preset["family"]]
    config = dict(preset["config"])
    if num_classes is not None:
        config["num_classes"] = num_classes
    overrides = {k: v for k, v in overrides.items() if v is not None}
    arguments = set(builder_arguments(cls)) | {"name", "dtype", "trainable"}
    unknown = sorted(set(overrides) - arguments)
    if unknown:
        raise TypeError(
            f"build({name!r}): {cls.__name__} takes no argument(s) {unknown}; "
            f"its arguments: {', '.join(builder_arguments(cls))}."
        )
    config.update(overrides)
    config.setdefault("name", name)
    return cls(**config)
