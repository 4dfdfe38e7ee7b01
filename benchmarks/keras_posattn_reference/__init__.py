"""Reference builds of the zoo's architectures from stock Keras, for speed ratios.

Each zoo family gets one module here, ``benchmarks/keras_posattn_reference/<family>.py``,
that writes the same architecture the way a competent Keras user would
without this library: ``keras.layers`` (``Embedding``, ``Dense``,
``Conv1D``, ``LSTM``, ``MultiHeadAttention``, ``LayerNormalization``,
``Dropout``, ``Softmax``...), ``keras.ops`` on symbolic tensors in a
functional model, and small plain ``keras.layers.Layer`` subclasses where
something depends on the batch's length (dense (n, n) positional masks built
per call, a position table sliced to n). Nothing here imports
``keras_posattn.layers`` or ``keras_posattn.attention_ops``: a reference that
called our layers would measure our code against itself.

A module registers one function per family::

    @register("mpsan")
    def build(config):          # config = zoo_model.get_config()
        ...
        return reference, transfer   # transfer(ours, reference) copies weights

so that ``build_reference(model)`` returns a stock-Keras model computing the
same logits as the zoo model (inference mode; dropout layers sit where ours
has them, so training costs the same work). ``benchmarks/bench_reference.py``
times both on the same batches; ``tests/test_reference_builds.py`` checks the
logits agree.

The helpers below are the pieces every reference shares, written once: the
word embedding (one stock ``Embedding`` holding our merged table: frozen
pretrained rows and trained OOV rows are one matrix here, and the whole table
trains unless the model freezes it), the classification head, masked max
pooling, and weight copying.
"""

import importlib
import pkgutil

import keras
import numpy as np
from keras import ops

#: Family name (a zoo preset's ``family``) -> ``build(config) -> (reference, transfer)``.
REFERENCES = {}


def register(family):
    """Decorator: ``build(config) -> (reference_model, transfer)`` for ``family``."""

    def decorator(build):
        REFERENCES[family] = build
        return build

    return decorator


def load_all():
    """Import every ``benchmarks/keras_posattn_reference/<family>.py`` so that it registers."""
    for module in pkgutil.iter_modules(__path__):
        if not module.name.startswith("_"):
            importlib.import_module(f"{__name__}.{module.name}")
    return dict(REFERENCES)


def build_reference(model):
    """The stock-Keras reference of a built zoo model, with its weights.

    Args:
        model: a zoo model (``keras_posattn.zoo.build(...)``).

    Returns:
        A ``keras.Model``: token ids in (the same shape as ``model``'s input),
        float32 logits out, equal to ``model``'s in inference mode.
    """
    load_all()
    family = model.family
    if family not in REFERENCES:
        raise NotImplementedError(
            f"No stock-Keras reference for family {family!r} "
            f"(have: {', '.join(sorted(REFERENCES))})."
        )
    reference, transfer = REFERENCES[family](model.get_config())
    transfer(model, reference)
    return reference


# --------------------------------------------------------------------------
# Shared stock pieces
# --------------------------------------------------------------------------


def token_input(rank=1):
    """``keras.Input`` of int32 token ids, (batch, n) or (batch, sentences, words)."""
    return keras.Input(shape=(None,) * rank, dtype="int32", name="token_ids")


def embedding(config, name="token_embedding"):
    """A stock ``Embedding`` of the contract's size; trainable unless the model
    freezes every row (``trainable_embeddings="none"``)."""
    l2 = config.get("embedding_l2") or 0.0
    return keras.layers.Embedding(
        config["vocabulary_size"],
        config["embedding_dim"],
        embeddings_regularizer=keras.regularizers.L2(l2) if l2 else None,
        trainable=config.get("trainable_embeddings", "all") != "none",
        name=name,
    )


def l2_factory(factor):
    """A callable giving a fresh ``L2(factor)`` (or None for 0) per layer."""
    return lambda: keras.regularizers.L2(factor) if factor else None


def head(x, num_classes, hidden_units=0, activation="relu", dropout=0.0, use_bias=True,
         regularizer=lambda: None, logits_max_norm=None):
    """``Dropout -> [Dense(hidden_units, activation) -> Dropout] -> Dense(num_classes)``,
    float32 logits; layers named ``head_hidden`` and ``head_logits``."""
    if hidden_units:
        x = keras.layers.Dropout(dropout, name="head_hidden_dropout")(x)
        x = keras.layers.Dense(hidden_units, activation=activation, name="head_hidden",
                               kernel_regularizer=regularizer())(x)
    x = keras.layers.Dropout(dropout, name="head_logits_dropout")(x)
    return keras.layers.Dense(
        num_classes, use_bias=use_bias, dtype="float32", name="head_logits",
        kernel_regularizer=regularizer(),
        kernel_constraint=(keras.constraints.MaxNorm(logits_max_norm, axis=0)
                           if logits_max_norm else None),
    )(x)


#: Fill for padded positions before a max: the most negative finite float32.
LOWEST = float(np.finfo("float32").min)


def masked_max(x, padding):
    """Max over time of the real positions: padding filled with the lowest float."""
    return ops.max(ops.where(ops.expand_dims(padding, -1), x, LOWEST), axis=1)


def zero_padded(x, padding):
    """``x`` with padded positions set to zero (x: (batch, n, d))."""
    return x * ops.expand_dims(ops.cast(padding, x.dtype), -1)


def assign(variable, value):
    """Assign ``value`` reshaped to the variable's shape (a (d, 1) kernel into a
    (d, 1) Dense kernel, a scalar bias into a (1,) one)."""
    value = np.asarray(ops.convert_to_numpy(value), dtype="float32")
    variable.assign(value.reshape(tuple(variable.shape)))


def copy_embedding(ours, reference, name="token_embedding"):
    """Our embedding's lookup table (merged frozen and OOV rows) into the reference's."""
    assign(reference.get_layer(name).embeddings, ours.embedding.table())


def copy_layer(ours_layer, reference_layer):
    """Weights of two layers of the same structure (Dense, Conv1D, LSTM...)."""
    reference_layer.set_weights(ours_layer.get_weights())


def copy_head(ours, reference):
    """Our ``ClassificationHead`` into the reference's ``head_hidden`` / ``head_logits``."""
    if ours.head.hidden is not None:
        copy_layer(ours.head.hidden, reference.get_layer("head_hidden"))
    copy_layer(ours.head.logits, reference.get_layer("head_logits"))
