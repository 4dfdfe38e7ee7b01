"""Model families, one file per paper; each registers itself with the zoo.

``base.ZooModel`` is the contract every family follows; ``TextClassifier``
joins a family's preprocessor and model into one strings-to-logits model.
"""

from keras_posattn.models.base import ZooModel
from keras_posattn.models.bilstm import BiLSTM
from keras_posattn.models.cspan import CSPAN
from keras_posattn.models.disan import DiSAN
from keras_posattn.models.dpcnn import DPCNN
from keras_posattn.models.epn import EPN
from keras_posattn.models.han import HAN
from keras_posattn.models.hcan import HCAN
from keras_posattn.models.hcan import FlatHCAN
from keras_posattn.models.kim_cnn import KimCNN
from keras_posattn.models.mpsan import MPSAN
from keras_posattn.models.shallow_cnn import ShallowCNN
from keras_posattn.models.spe_cnn import SPECNN
from keras_posattn.models.text_classifier import TextClassifier
from keras_posattn.models.transformer import Transformer

__all__ = [
    "BiLSTM",
    "CSPAN",
    "DPCNN",
    "DiSAN",
    "EPN",
    "FlatHCAN",
    "HAN",
    "HCAN",
    "KimCNN",
    "MPSAN",
    "SPECNN",
    "ShallowCNN",
    "TextClassifier",
    "Transformer",
    "ZooModel",
]
