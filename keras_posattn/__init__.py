"""keras-posattn: a Keras 3 model zoo of positional self-attention text classifiers.

``import keras_posattn`` registers every serializable class of the library
(layers, masks, preprocessors, zoo models, ``TextClassifier``) with Keras, so
``keras.saving.load_model("classifier.keras")`` works with nothing else
imported. It does so as soon as TensorFlow and Keras are loaded: at once if
they already are, else right after the program's first ``import keras`` or
``import tensorflow`` finishes, so that importing this package alone (as the
``keras-posattn`` command does before it quiets TensorFlow's start-up
messages) does not load TensorFlow.
"""

import importlib.abc
import sys
import threading
import warnings

__version__ = "0.1.0"

#: Modules whose import registers the serializable classes.
SERIALIZABLE_MODULES = (
    "keras_posattn.masks",
    "keras_posattn.layers",
    "keras_posattn.preprocessing",
    "keras_posattn.models",
)
_TRIGGERS = ("keras", "tensorflow")


def register_serializables():
    """Import the modules that register this library's Keras classes."""
    import importlib

    for name in SERIALIZABLE_MODULES:
        importlib.import_module(name)


class _RegisterAfterImport(importlib.abc.MetaPathFinder):
    """Runs ``register_serializables`` once the outermost import of Keras or
    TensorFlow (each imports the other) has finished, then steps aside.

    When that import happens inside an import of one of this package's own
    modules (``import keras_posattn.preprocessing`` importing Keras first),
    registering then would import that half-made module: the registration
    waits until the outermost import of the package's modules has finished.
    """

    def __init__(self):
        self.depth = {"trigger": 0, "own": 0}
        self.pending = False
        self.lock = threading.RLock()

    def find_spec(self, name, path=None, target=None):
        kind = ("trigger" if name in _TRIGGERS
                else "own" if name.startswith(__name__ + ".") else None)
        if kind is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader.exec_module = self._wrap(spec.loader.exec_module, kind)
        return spec

    def _wrap(self, exec_module, kind):
        def exec_then_register(module):
            with self.lock:
                self.depth[kind] += 1
            try:
                exec_module(module)
            finally:
                with self.lock:
                    self.depth[kind] -= 1
                    if kind == "trigger" and self.depth["trigger"] == 0 and _imported(_TRIGGERS):
                        self.pending = True
                    ready = self.pending and not any(self.depth.values())
                    if ready:
                        self.pending = False
            if ready:
                self.remove()
                try:
                    register_serializables()
                except Exception as error:  # noqa: BLE001 - never break the user's import
                    warnings.warn(f"keras_posattn could not register its Keras classes: "
                                  f"{type(error).__name__}: {error}", stacklevel=2)

        return exec_then_register

    def remove(self):
        if self in sys.meta_path:
            sys.meta_path.remove(self)


def _imported(names):
    return all(n in sys.modules for n in names)


if _imported(_TRIGGERS):
    register_serializables()
else:
    sys.meta_path.insert(0, _RegisterAfterImport())
