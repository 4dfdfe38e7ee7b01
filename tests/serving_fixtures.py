"""A tiny trained-looking text classifier and its export, shared by the export
and serving tests (see the ``tiny_classifier`` / ``tiny_export`` fixtures in
conftest.py)."""

import keras
import numpy as np

from keras_posattn import zoo
from keras_posattn.models import TextClassifier
from keras_posattn.preprocessing import TextPreprocessor

SEQ_LEN = 8
LABELS = ["negative", "neutral", "positive"]
SENTENCES = [
    "the movie was great",
    "the plot was bad",
    "the acting was ok",
    "a great cast and a bad script",
    "boring but the music was fine",
]
# "" -> all padding; the long text has more than SEQ_LEN tokens (truncated);
# the third is all out-of-vocabulary; the last needs standardization.
TEXTS = [
    "the movie was great",
    "",
    "the plot was bad and the acting was bad and the music was bad too " * 3,
    "zzz qqq unknownword",
    "The PLOT, the acting... GREAT!",
]


def make_classifier(labels=LABELS):
    pre = TextPreprocessor.from_texts(SENTENCES, max_length=SEQ_LEN)
    keras.utils.set_random_seed(1)
    model = zoo.build("mpsan_table5_no_attention", num_classes=len(LABELS),
                      vocabulary_size=pre.vocabulary_size, embedding_dim=8, max_length=SEQ_LEN)
    # Large weights so the classes are well separated (no argmax ties).
    rng = np.random.default_rng(2)
    for w in model.trainable_weights:
        w.assign(rng.normal(0.0, 1.0, size=tuple(w.shape)).astype("float32"))
    return TextClassifier(pre, model, label_names=labels)
