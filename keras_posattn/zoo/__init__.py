"""The model zoo: ``build(name)`` and ``list_models(pattern)``.

Example:

>>> from keras_posattn import zoo
>>> zoo.list_models("mpsan_table2_*")[:2]
['mpsan_table2_model0', 'mpsan_table2_model1']
>>> model = zoo.build("mpsan")  # the paper's defaults: 5 classes, 20,000 words

Importing this module imports the model families, which register themselves.
"""

import keras_posattn.models  # noqa: F401  (registers the families)
from keras_posattn.registry import PresetError
from keras_posattn.registry import build
from keras_posattn.registry import families
from keras_posattn.registry import get_preset
from keras_posattn.registry import list_models
from keras_posattn.registry import register_family

__all__ = ["PresetError", "build", "families", "get_preset", "list_models", "register_family"]
