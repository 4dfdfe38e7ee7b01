"""Labelled text: file readers, and the embedded default task.

Nothing here imports TensorFlow or Keras.
"""

from keras_posattn.datasets.catalog import (
    DATASETS,
    DatasetError,
    known_datasets,
    load_dataset,
    parse_tree,
    stratified_folds,
)
from keras_posattn.datasets.readers import (
    SUPPORTED_FORMATS,
    DataFormatError,
    LabelledTexts,
    encode_labels,
    find_label_names,
    read_label_names,
    read_labelled,
    read_texts,
)
from keras_posattn.datasets.synthetic import (
    DEFAULT_SAMPLE_DOCUMENT,
    DEFAULT_SAMPLE_LABEL,
    DEFAULT_SAMPLE_SENTENCE,
    LABEL_NAMES,
    SyntheticTask,
    generate_position_task,
    label_of,
    write_tsv,
)

__all__ = [
    "DATASETS",
    "DatasetError",
    "known_datasets",
    "load_dataset",
    "parse_tree",
    "stratified_folds",
    "DEFAULT_SAMPLE_DOCUMENT",
    "DEFAULT_SAMPLE_LABEL",
    "DEFAULT_SAMPLE_SENTENCE",
    "DataFormatError",
    "LABEL_NAMES",
    "LabelledTexts",
    "SUPPORTED_FORMATS",
    "SyntheticTask",
    "encode_labels",
    "find_label_names",
    "generate_position_task",
    "label_of",
    "read_label_names",
    "read_labelled",
    "read_texts",
    "write_tsv",
]
