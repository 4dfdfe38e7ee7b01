"""KerasTuner search spaces, one file per model family (shipped as keras_posattn._tuning).

Each file defines a ``keras_posattn.hypermodel.ZooHyperModel`` subclass registered
with ``@register_search("<family>")``; its ``space(hp)`` declares the family's
hyperparameters with the paper's values as defaults and returns model
arguments. Read them, edit them: ``keras-posattn tune <model>`` uses them.
"""

from keras_posattn._tuning import cspan  # noqa: F401
from keras_posattn._tuning import epn  # noqa: F401
from keras_posattn._tuning import hcan  # noqa: F401
from keras_posattn._tuning import mpsan  # noqa: F401
from keras_posattn._tuning import spe_cnn  # noqa: F401
