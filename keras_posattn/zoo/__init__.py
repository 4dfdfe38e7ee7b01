"""The model zoo: ``build(name, num_classes=...)`` and ``list_models(pattern)``.

Example:

>>> from keras_posattn import zoo
>>> zoo.list_models("mpsan_table2_*")[:2]
['mpsan_table2_model0', 'mpsan_table2_model1']
>>> model = zoo.build("mpsan", num_classes=5, vocabulary_size=1000)
"""

from keras_posattn.zoo.registry import build
from keras_posattn.zoo.registry import get_preset
from keras_posattn.zoo.registry import list_models
from keras_posattn.zoo.registry import register_family
from keras_posattn.zoo.registry import zoo_dir

__all__ = ["build", "get_preset", "list_models", "register_family", "zoo_dir"]
