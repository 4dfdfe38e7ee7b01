import keras
import numpy as np
import tensorflow as tf

from keras_posattn.models.logits_classifier import LogitsClassifier


@keras.saving.register_keras_serializable(package="keras_posattn")
class TextClassifier(LogitsClassifier):
    """Raw strings in, class logits out: a preprocessor and a zoo model.

    What ``keras-posattn train`` saves as ``classifier.keras`` and what the
    SavedModel export serves: ``model(preprocessor(text))``, one data path
    from strings to logits. The class names travel with it.

    Args:
        preprocessor: the model family's preprocessor (e.g. a
            ``TextPreprocessor``).
        model: a zoo model taking the preprocessor's outputs.
        label_names: class names, ``label_names[i]`` for logit ``i``.

    Example:

    >>> from keras_posattn import zoo
    >>> from keras_posattn.models import TextClassifier
    >>> from keras_posattn.preprocessing import TextPreprocessor
    >>> pre = TextPreprocessor.from_texts(["a good film", "a bad film"], max_length=8)
    >>> net = zoo.build("mpsan", num_classes=2, vocabulary_size=pre.vocabulary_size,
    ...                 embedding_dim=16, max_length=8)
    >>> clf = TextClassifier(pre, net, label_names=["neg", "pos"])
    >>> clf.predict_labels(["a good film"])[0] in ("neg", "pos")
    True
    """

    def __init__(self, preprocessor, model, label_names=None, **kwargs):
        text = keras.Input(shape=(), dtype="string", name="text")
        logits = model(preprocessor(text))
        super().__init__(inputs=text, outputs=logits, **kwargs)
        num_classes = logits.shape[-1]
        if label_names is None:
            label_names = [f"class_{i}" for i in range(num_classes)]
        label_names = [str(n) for n in label_names]
        if len(label_names) != num_classes:
            raise ValueError(
                f"{len(label_names)} label names for a model with {num_classes} classes."
            )
        self.preprocessor = preprocessor
        self.model = model
        self.label_names = label_names

    def fit(self, x=None, y=None, *args, **kwargs):
        """``keras.Model.fit``; ``x`` may also be a list or NumPy array of
        strings and ``y`` a list of class ids or of label names (as do
        ``validation_data=(texts, labels)``, ``evaluate`` and ``predict``)."""
        if isinstance(kwargs.get("validation_data"), tuple):
            texts, labels, *rest = kwargs["validation_data"]
            kwargs["validation_data"] = (self._texts(texts), self._class_ids(labels), *rest)
        return super().fit(self._texts(x), self._class_ids(y), *args, **kwargs)

    def evaluate(self, x=None, y=None, *args, **kwargs):
        return super().evaluate(self._texts(x), self._class_ids(y), *args, **kwargs)

    def predict(self, x, *args, **kwargs):
        """Logits, (len(x), num_classes); ``x`` may be a list of strings."""
        return super().predict(self._texts(x), *args, **kwargs)

    @staticmethod
    def _texts(x):
        """Strings as Keras' array adapter takes them (an object array)."""
        if isinstance(x, (list, tuple)) and x and all(isinstance(t, (str, bytes)) for t in x):
            return np.array(x, dtype=object)
        if isinstance(x, np.ndarray) and x.dtype.kind in "US":
            return x.astype(object)
        return x

    def _class_ids(self, y):
        """Label names as int32 class ids (class ids as they are)."""
        if not isinstance(y, (list, tuple, np.ndarray)):
            return y
        y = np.asarray(y)
        if y.dtype.kind in "USO":
            index = {name: i for i, name in enumerate(self.label_names)}
            unknown = sorted({str(v) for v in y.ravel() if str(v) not in index})
            if unknown:
                raise ValueError(f"labels {unknown[:5]} are not among the classifier's "
                                 f"label_names {self.label_names}.")
            return np.array([index[str(v)] for v in y.ravel()], "int32").reshape(y.shape)
        return y

    def predict_probabilities(self, texts):
        """Softmax probabilities (NumPy, (len(texts), num_classes))."""
        logits = self(tf.constant(list(texts), dtype=tf.string), training=False)
        return keras.ops.convert_to_numpy(keras.ops.softmax(logits, axis=-1))

    def predict_labels(self, texts):
        """The most probable class name of each text."""
        probabilities = self.predict_probabilities(texts)
        return [self.label_names[i] for i in np.argmax(probabilities, axis=-1)]

    def get_config(self):
        return {
            "preprocessor": keras.saving.serialize_keras_object(self.preprocessor),
            "model": keras.saving.serialize_keras_object(self.model),
            "label_names": list(self.label_names),
            "name": self.name,
            "trainable": self.trainable,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["preprocessor"] = keras.saving.deserialize_keras_object(config["preprocessor"])
        config["model"] = keras.saving.deserialize_keras_object(config["model"])
        return cls(**config)
