"""One registry for every model in the zoo, in the style of timm.

Model *families* are Python builders registered with ``register_family``
(``MPSAN`` for ``"mpsan"``). Named *presets* - the paper's model, the
released-code variant, every ablation - are data: tables in the TOML files of
the repository's ``zoo/`` folder, each naming its family, its constructor
arguments and its training recipe. A preset may start from another with
``base = "<preset>"`` and override some arguments.
"""

import copy
import difflib
import fnmatch
import functools
import os
import tomllib
from pathlib import Path

_FAMILIES = {}


def register_family(name):
    """Decorator: register a model builder (class or function) under ``name``."""

    def decorator(builder):
        _FAMILIES[name] = builder
        return builder

    return decorator


def zoo_dir():
    """The folder holding the preset TOML files.

    ``KERAS_POSATTN_ZOO`` if set; else the repository's ``zoo/`` next to the
    package (a source checkout or editable install); else the copy packaged
    as ``keras_posattn/_zoo`` in a wheel.
    """
    env = os.environ.get("KERAS_POSATTN_ZOO")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent.parent
    for candidate in (here.parent / "zoo", here / "_zoo"):
        if candidate.is_dir() and any(candidate.glob("*.toml")):
            return candidate
    raise FileNotFoundError(
        "Cannot find the zoo presets (zoo/*.toml). Set KERAS_POSATTN_ZOO to the folder."
    )


@functools.lru_cache(maxsize=None)
def _raw_presets(folder):
    presets = {}
    for path in sorted(Path(folder).glob("*.toml")):
        with open(path, "rb") as f:
            try:
                data = tomllib.load(f)
            except tomllib.TOMLDecodeError as e:
                raise ValueError(f"{path}: invalid TOML: {e}") from e
        for name, table in data.items():
            if name in presets:
                raise ValueError(f"{path}: preset {name!r} is defined twice.")
            table = dict(table)
            table["source"] = str(path)
            presets[name] = table
    return presets


def _resolve(name, raw, seen=()):
    if name in seen:
        raise ValueError(f"Preset inheritance loop: {' -> '.join(seen + (name,))}")
    table = raw[name]
    base = table.get("base")
    if base is None:
        resolved = {"config": {}, "recipe": {}}
    else:
        if base not in raw:
            raise ValueError(f"{table['source']}: preset {name!r} has unknown base {base!r}.")
        resolved = _resolve(base, raw, seen + (name,))
    resolved = copy.deepcopy(resolved)
    _merge(resolved, {k: v for k, v in table.items() if k != "base"})
    resolved["name"] = name
    return resolved


def _merge(into, update):
    """Recursively merge tables; lists and values replace."""
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = copy.deepcopy(value)


def get_preset(name):
    """The resolved preset: ``family``, ``config``, ``recipe``, ``description``..."""
    _import_families()
    raw = _raw_presets(str(zoo_dir()))
    if name not in raw:
        known = sorted(raw)
        close = difflib.get_close_matches(name, known, n=5, cutoff=0.5)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        raise ValueError(
            f"Unknown model {name!r}.{hint} Known models: {', '.join(known)}. "
            "(keras_posattn.zoo.list_models() lists them.)"
        )
    preset = _resolve(name, raw)
    if preset.get("family") not in _FAMILIES:
        raise ValueError(
            f"{preset['source']}: preset {name!r} names unknown family "
            f"{preset.get('family')!r}; known families: {sorted(_FAMILIES)}."
        )
    return preset


def list_models(pattern="*"):
    """Sorted names of the presets matching an fnmatch ``pattern``."""
    raw = _raw_presets(str(zoo_dir()))
    return sorted(n for n in raw if fnmatch.fnmatch(n, pattern))


def build(name, num_classes=None, **overrides):
    """Build a zoo model by preset name.

    Args:
        name: a preset name (see ``list_models()``).
        num_classes: number of classes.
        **overrides: constructor arguments replacing the preset's; ``None``
            values are dropped so the preset's defaults stay in force.

    Returns:
        An unbuilt-weights-free, ready Keras model.
    """
    preset = get_preset(name)
    config = dict(preset["config"])
    if num_classes is not None:
        config["num_classes"] = num_classes
    config.update({k: v for k, v in overrides.items() if v is not None})
    if "num_classes" not in config:
        raise ValueError(f"build({name!r}) needs num_classes.")
    builder = _FAMILIES[preset["family"]]
    config.setdefault("name", name)
    return builder(**config)


def _import_families():
    # Importing the model modules registers their families.
    import keras_posattn.models  # noqa: F401
