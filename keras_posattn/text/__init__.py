"""Text pipeline: file readers, label encoding, vectorizer and word embeddings.

The readers and embedding helpers need only numpy; the vectorizer names
(which import TensorFlow/Keras) are loaded on first access.
"""

from keras_posattn.text.embeddings import (
    PACKAGED_VECTORS,
    EmbeddingInit,
    WordVectors,
    build_embedding_matrix,
    load_word_vectors,
    random_embedding_matrix,
)
from keras_posattn.text.readers import (
    SUPPORTED_FORMATS,
    DataFormatError,
    LabelledTexts,
    encode_labels,
    find_label_names,
    read_label_names,
    read_labelled,
    read_texts,
)

_VECTORIZER_NAMES = (
    "PAD_TOKEN",
    "OOV_TOKEN",
    "build_vectorizer",
    "build_vocabulary",
    "count_tokens",
    "tokenize",
    "vectorizer_vocabulary",
)

__all__ = [
    # readers
    "DataFormatError",
    "LabelledTexts",
    "SUPPORTED_FORMATS",
    "read_labelled",
    "read_texts",
    "encode_labels",
    "read_label_names",
    "find_label_names",
    # vectorizer
    *_VECTORIZER_NAMES,
    # embeddings
    "PACKAGED_VECTORS",
    "WordVectors",
    "EmbeddingInit",
    "load_word_vectors",
    "build_embedding_matrix",
    "random_embedding_matrix",
]


def __getattr__(name):
    if name in _VECTORIZER_NAMES:
        from keras_posattn.text import vectorizer

        value = getattr(vectorizer, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
