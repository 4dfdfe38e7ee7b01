"""Data: the embedded position-sensitive default task and baselines.

Nothing here imports TensorFlow or Keras.
"""

from keras_posattn.data.baselines import (
    BagOfWordsClassifier,
    bag_of_words_baseline,
)
from keras_posattn.data.synthetic import (
    DEFAULT_SAMPLE_LABEL,
    DEFAULT_SAMPLE_SENTENCE,
    LABEL_NAMES,
    SyntheticTask,
    generate_position_task,
    label_of,
    write_tsv,
)

__all__ = [
    "BagOfWordsClassifier",
    "DEFAULT_SAMPLE_LABEL",
    "DEFAULT_SAMPLE_SENTENCE",
    "LABEL_NAMES",
    "SyntheticTask",
    "bag_of_words_baseline",
    "generate_position_task",
    "label_of",
    "write_tsv",
]
