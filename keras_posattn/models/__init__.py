"""Model families, one file per paper; each registers itself with the zoo."""

from keras_posattn.models.mpsan import MPSAN
from keras_posattn.zoo.registry import register_family

register_family("mpsan")(MPSAN)

__all__ = ["MPSAN"]
