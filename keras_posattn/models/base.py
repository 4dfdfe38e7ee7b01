"""The contract every zoo model follows.

A zoo model is a functional ``keras.Model`` subclass (one file per paper in
``keras_posattn/models/``) that:

- takes what its preprocessor makes (``preprocessor_cls``: token ids
  (batch, n) for ``TextPreprocessor``, (batch, sentences, words) for
  ``DocumentPreprocessor``; 0 = padding, 1 = unknown) and returns
  class logits (batch, num_classes), float32 under any dtype policy;
- accepts the contract's constructor arguments, with the same meaning in
  every family: ``vocabulary_size``, ``num_classes``, ``max_length``,
  ``dropout``, ``embedding_dim``, ``trainable_embeddings``, ``embedding_l2``,
  ``embedding_initializer``, and every other size its preprocessor's
  ``model_sizes()`` names (``max_sentences`` for documents). Defaults:
  20,000 words, 5 classes as on SST-5, a U(-0.05, 0.05) table until
  pretrained vectors load; ``max_length`` and the rest from the family's
  paper;
- has its word embedding at ``model.embedding`` (a ``TokenEmbedding`` named
  ``"token_embedding"``, made with ``make_embedding``) and ends with one
  ``ClassificationHead`` named ``"head"`` (``model.head``);
- answers ``attention_tensors(inputs)`` (empty unless the family has
  attention worth drawing): a dict of tensors, ``(batch, n_q, n_k)`` heat-maps
  or ``(batch, n)`` weights over tokens; ``attention_maps`` gives them as
  NumPy arrays. A family with attention writes its computation once, as
  ``forward`` (which builds the functional graph), and collects the weights
  with ``call_attention``;
- stores every constructor argument as an attribute of the same name
  (``store_arguments(locals())`` does it), so ``get_config()`` (here, once)
  returns exactly the constructor arguments and ``.keras`` files load with
  ``safe_mode=True``;
- registers itself with ``@register_family("<name>")``; its presets live in
  ``zoo/<family>.toml``.

The trainer, the export, parameter counting, the TensorBoard images and the
shared model tests use this contract and nothing else.
"""

import keras
from keras import ops

from keras_posattn.layers import ClassificationHead
from keras_posattn.layers import TokenEmbedding
from keras_posattn.layers.token_embedding import TRAINABLE_ROWS
from keras_posattn.models.logits_classifier import LogitsClassifier
from keras_posattn.preprocessing import TextPreprocessor
from keras_posattn.registry import builder_arguments

DEFAULT_VOCABULARY_SIZE = 20000
DEFAULT_NUM_CLASSES = 5  # SST-5, the benchmark MPSAN and DiSAN lead with

#: Constructor arguments every family accepts.
CONTRACT_ARGUMENTS = (
    "vocabulary_size",
    "num_classes",
    "max_length",
    "dropout",
    "embedding_dim",
    "trainable_embeddings",
    "embedding_l2",
    "embedding_initializer",
)


class ZooModel(LogitsClassifier):
    """Base class of the zoo's models (see the module docstring).

    Subclasses build their layers, call ``super().__init__(inputs=...,
    outputs=..., **kwargs)`` and then ``self.store_arguments(locals())``.
    """

    #: The preprocessor class between raw strings and this model's inputs.
    preprocessor_cls = TextPreprocessor
    #: Set by ``keras_posattn.registry.register_family``.
    family = None

    @staticmethod
    def check_contract(vocabulary_size, num_classes, max_length, dropout,
                       embedding_dim, trainable_embeddings, embedding_l2):
        """Clear errors for bad contract arguments (before any layer is made)."""
        if int(vocabulary_size) < 3:
            raise ValueError(f"vocabulary_size must be >= 3 (PAD, UNK, a word), got {vocabulary_size}.")
        if isinstance(num_classes, bool) or not hasattr(num_classes, "__index__") or num_classes < 2:
            raise ValueError(f"num_classes must be an int >= 2, got {num_classes!r}.")
        if max_length is not None and int(max_length) < 1:
            raise ValueError(f"max_length must be >= 1 or None, got {max_length}.")
        if not 0.0 <= float(dropout) < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}.")
        if int(embedding_dim) < 1:
            raise ValueError(f"embedding_dim must be >= 1, got {embedding_dim}.")
        if trainable_embeddings not in TRAINABLE_ROWS:
            raise ValueError(
                f"trainable_embeddings must be one of {TRAINABLE_ROWS}, got {trainable_embeddings!r}."
            )
        if float(embedding_l2) < 0:
            raise ValueError(f"embedding_l2 must be >= 0, got {embedding_l2}.")

    @staticmethod
    def make_embedding(vocabulary_size, embedding_dim, trainable_embeddings, embedding_l2=0.0,
                       embedding_initializer=None):
        """The word embedding of the contract, named ``"token_embedding"``.

        ``embedding_l2`` is a Keras L2 factor on the trainable table
        (``l * sum(w ** 2)``); ``embedding_initializer`` initialises the table
        (None: U(-0.05, 0.05), the papers' OOV initialisation); loading
        pretrained vectors (``set_pretrained``) replaces every row.
        """
        return TokenEmbedding(
            vocabulary_size,
            embedding_dim,
            trainable_rows=trainable_embeddings,
            embeddings_initializer=embedding_initializer,
            embeddings_regularizer=keras.regularizers.L2(embedding_l2) if embedding_l2 else None,
            name="token_embedding",
        )

    @staticmethod
    def make_head(num_classes, hidden_units=0, activation="relu", dropout=0.0, use_bias=True,
                  **weight_options):
        """The classification head of the contract, named ``"head"``."""
        return ClassificationHead(
            num_classes,
            hidden_units=hidden_units,
            activation=activation,
            dropout=dropout,
            use_bias=use_bias,
            name="head",
            **weight_options,
        )

    @property
    def embedding(self):
        """The ``TokenEmbedding`` (load vectors with ``set_pretrained``)."""
        return self.get_layer("token_embedding")

    @property
    def head(self):
        """The ``ClassificationHead``."""
        return self.get_layer("head")

    #: The family's computation, ``forward(layers, token_ids, collect=None,
    #: training=None)`` over ``self._layers_by_role`` (a staticmethod): the
    #: functional graph is built by it, and ``attention_tensors`` runs it again
    #: with ``collect``, a dict that ``call_attention`` fills. None for a family
    #: without attention worth drawing.
    forward = None

    def attention_tensors(self, inputs):
        """Attention weights worth drawing, by name, as tensors (graph-friendly:
        the export serves them in its ``attention`` signature): what
        ``forward`` collects, none without it. Names use letters, digits,
        ``_`` and ``/``."""
        collected = {}
        if self.forward is not None:
            self.forward(self._layers_by_role, inputs, collect=collected)
        return collected

    def attention_maps(self, inputs):
        """``attention_tensors`` as NumPy arrays: (batch, n_q, n_k) heat-maps
        or (batch, n) weights over tokens."""
        tensors = self.attention_tensors(ops.convert_to_tensor(inputs, "int32"))
        return {name: ops.convert_to_numpy(ops.cast(t, "float32")) for name, t in tensors.items()}

    def store_arguments(self, arguments):
        """Keep every constructor argument as an attribute of the same name
        (call with ``locals()`` after ``super().__init__``): ``get_config``
        reads them back."""
        for name in self.constructor_arguments():
            setattr(self, name, arguments[name])

    @staticmethod
    def call_attention(layer, inputs, mask=None, collect=None, names=(), reduce=None,
                       training=None):
        """``layer(inputs, mask=mask, training=training)``, the one way a family
        collects attention for ``attention_tensors``: with ``collect`` (a dict)
        the layer is called with ``return_attention_scores=True`` and each
        weights tensor it returns after its output is stored under the
        matching name of ``names`` (a string for one), through ``reduce`` when
        given (e.g. a mean over heads or features)."""
        if collect is None:
            return layer(inputs, mask=mask, training=training)
        outputs, *weights = layer(inputs, mask=mask, return_attention_scores=True,
                                  training=training)
        names = [names] if isinstance(names, str) else list(names)
        for name, value in zip(names, weights):
            collect[name] = value if reduce is None else reduce(value)
        return outputs

    @classmethod
    def constructor_arguments(cls):
        return builder_arguments(cls)

    def get_config(self):
        config = {name: getattr(self, name) for name in self.constructor_arguments()}
        config.update(name=self.name, trainable=self.trainable)
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)
