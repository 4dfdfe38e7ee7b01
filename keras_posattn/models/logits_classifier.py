"""``compile()`` defaults for models whose outputs are class logits.

Every zoo model (``ZooModel``) and ``TextClassifier`` returns logits, so, as
keras-hub's ``TextClassifier.compile`` does, ``compile()`` with no argument
gives a sparse categorical cross-entropy on logits, an accuracy metric and
Adam; a cross-entropy named by string (``loss="sparse_categorical_crossentropy"``)
is taken on logits too, and one built with ``from_logits=False`` is refused
(it would train on logits as if they were probabilities).
"""

import keras
import numpy as np

#: Adam's learning rate when ``compile()`` is given no optimizer (the 50d
#: recipes' choice for training from scratch).
DEFAULT_LEARNING_RATE = 1e-3

_CROSSENTROPIES = {
    "sparse_categorical_crossentropy": keras.losses.SparseCategoricalCrossentropy,
    "categorical_crossentropy": keras.losses.CategoricalCrossentropy,
}


def logits_loss(loss):
    """``loss`` for a model that outputs logits: "auto" or a cross-entropy
    named by string or function becomes the ``from_logits=True`` loss; a
    cross-entropy instance built with ``from_logits=False`` raises; anything
    else is returned as given."""
    if isinstance(loss, str):
        if loss == "auto":
            return keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        key = loss if loss in _CROSSENTROPIES else _snake_case(loss)
        if key in _CROSSENTROPIES:
            return _CROSSENTROPIES[key](from_logits=True)
        return loss
    if callable(loss) and getattr(loss, "__name__", None) in _CROSSENTROPIES:
        return _CROSSENTROPIES[loss.__name__](from_logits=True)
    if isinstance(loss, tuple(_CROSSENTROPIES.values())):
        if not loss.get_config().get("from_logits"):
            raise ValueError(
                f"loss {type(loss).__name__}(from_logits=False): this model outputs "
                "logits; pass from_logits=True, or loss='auto'."
            )
    return loss


def _batch_spec(x, y):
    """``(features, labels)`` as tensor specs with an unknown batch size: a
    ``tf.data.Dataset``'s element spec, or the first row of arrays or lists;
    None for anything else."""
    import tensorflow as tf

    if isinstance(x, tf.data.Dataset):
        spec = x.element_spec
        if isinstance(spec, tuple) and len(spec) in (2, 3) and all(
                isinstance(s, tf.TensorSpec) for s in spec):
            return spec[0], spec[1]
        return None
    if y is None or not isinstance(x, (np.ndarray, list, tuple)) or \
            not isinstance(y, (np.ndarray, list, tuple)) or not len(x) or not len(y):
        return None
    try:
        first = [tf.convert_to_tensor(np.asarray(v[:1])) for v in (x, y)]
    except (TypeError, ValueError):
        return None
    return tuple(tf.TensorSpec([None, *t.shape[1:]], t.dtype) for t in first)


def _snake_case(name):
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


class LogitsClassifier(keras.Model):
    """A ``keras.Model`` that outputs class logits, with keras-hub-style
    ``compile()`` defaults (see the module docstring)."""

    def compile(self, optimizer="auto", loss="auto", *, metrics="auto", **kwargs):
        """Configure training, as ``keras.Model.compile`` with defaults.

        Args:
            optimizer: ``"auto"`` (Adam, learning rate 1e-3), an optimizer name
                or a ``keras.optimizers.Optimizer``.
            loss: ``"auto"`` (``SparseCategoricalCrossentropy(from_logits=True)``,
                for integer class ids), a loss name or a ``keras.losses.Loss``;
                cross-entropies are taken on logits.
            metrics: ``"auto"`` (sparse categorical accuracy, logged as
                ``accuracy``) or a list of metrics.
            **kwargs: the other arguments of ``keras.Model.compile``.
        """
        if isinstance(optimizer, str) and optimizer == "auto":
            optimizer = keras.optimizers.Adam(DEFAULT_LEARNING_RATE)
        if isinstance(metrics, str) and metrics == "auto":
            metrics = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
        super().compile(optimizer=optimizer, loss=logits_loss(loss), metrics=metrics, **kwargs)

    def compile_from_config(self, config):
        """Compile as the saved model was (``load_model`` calls it): its own
        optimizer, loss and metrics."""
        config = keras.saving.deserialize_keras_object(config)
        self.compile(**config)
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def fit(self, x=None, y=None, *args, **kwargs):
        """``keras.Model.fit``; integer labels outside ``0..num_classes-1``
        (in ``y`` or ``validation_data``) raise a one-line error, and the
        training step is traced once (``_build_before_tracing``)."""
        validation = kwargs.get("validation_data")
        if isinstance(validation, tuple) and len(validation) >= 2:
            self.check_labels(validation[1])
        y = self.check_labels(y)
        self._build_before_tracing(x, y)
        return super().fit(x, y, *args, **kwargs)

    def train_on_batch(self, x, y=None, *args, **kwargs):
        """``keras.Model.train_on_batch``, its step traced once (see ``fit``)."""
        self._build_before_tracing(x, y)
        return super().train_on_batch(x, y, *args, **kwargs)

    def _build_before_tracing(self, x, y):
        """Create the optimizer's and the compiled metrics' variables before
        ``fit`` traces its training step.

        Without a distribution strategy, Keras's TensorFlow trainer creates
        them inside the first trace of the step, and ``tf.function`` then
        traces the whole step a second time (a function that created
        variables is traced again without): measured, the second trace was
        a third of a small HCAN run's time. Keras's own symbolic build (what
        it runs first under a strategy) makes them from the batch's shapes
        alone; it is skipped where Keras runs it itself or the batch's
        structure is not a plain (features, labels) one, and any failure
        leaves ``fit`` to build as Keras does."""
        if self.optimizer is None or self.optimizer.built:
            return
        if getattr(self, "_distribute_strategy", None) is not None:
            return  # Keras builds symbolically itself
        batch = _batch_spec(x, y)
        if batch is None:
            return
        try:
            with self.distribute_strategy.scope():
                self._symbolic_build(data_batch=batch)
        except Exception:  # noqa: BLE001 - fit builds in its trace as Keras does
            return

    def evaluate(self, x=None, y=None, *args, **kwargs):
        return super().evaluate(x, self.check_labels(y), *args, **kwargs)

    def check_labels(self, y):
        """``y`` itself; an error if it holds integer class ids the model's
        ``num_classes`` logits do not cover (Keras would fail deep inside the
        loss, or train on a wrong loss)."""
        if isinstance(y, (list, tuple, np.ndarray)):
            ids = np.asarray(y)
            num_classes = self.outputs[0].shape[-1]
            if ids.dtype.kind in "iu" and ids.size and not 0 <= ids.min() <= ids.max() < num_classes:
                raise ValueError(
                    f"labels must be class ids 0..{num_classes - 1} (num_classes={num_classes}), "
                    f"found {int(ids.min())}..{int(ids.max())}."
                )
        return y
