"""Between raw strings and model inputs: the tokenizer and the preprocessors.

Each model family names its preprocessor class (``preprocessor_cls``); the
trainer, the saved ``classifier.keras`` and the SavedModel export all go
through an instance of it, so training and serving see the same ids.
"""

from keras_posattn.preprocessing.document_preprocessor import DocumentPreprocessor
from keras_posattn.preprocessing.document_preprocessor import split_sentences
from keras_posattn.preprocessing.text_preprocessor import TextPreprocessor
from keras_posattn.preprocessing.tokenizer import (
    DEFAULT_STANDARDIZE,
    OOV_TOKEN,
    PAD_TOKEN,
    STANDARDIZE_OPTIONS,
    build_vocabulary,
    count_tokens,
    standardize_strings,
    tokenize,
)
from keras_posattn.preprocessing.wordpiece_preprocessor import WordPiecePreprocessor
from keras_posattn.preprocessing.wordpiece_preprocessor import require_tensorflow_text

__all__ = [
    "DEFAULT_STANDARDIZE",
    "DocumentPreprocessor",
    "OOV_TOKEN",
    "PAD_TOKEN",
    "STANDARDIZE_OPTIONS",
    "TextPreprocessor",
    "WordPiecePreprocessor",
    "build_vocabulary",
    "count_tokens",
    "require_tensorflow_text",
    "split_sentences",
    "standardize_strings",
    "tokenize",
]
