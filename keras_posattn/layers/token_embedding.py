import numpy as np
import keras
from keras import ops

TRAINABLE_ROWS = ("all", "oov", "none")


class FrozenRows(keras.layers.Layer):
    """The frozen rows of a ``TokenEmbedding(trainable_rows="oov")``: a
    non-trainable (vocabulary_size, output_dim) table, zero in the trainable
    rows. Built only when some frozen row holds a vector (pretrained vectors
    were loaded), so a model without them keeps one table; built on loading
    when the saved file holds it."""

    def __init__(self, vocabulary_size, output_dim, **kwargs):
        super().__init__(**kwargs)
        self.vocabulary_size = int(vocabulary_size)
        self.output_dim = int(output_dim)

    def build(self, input_shape=None):
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.vocabulary_size, self.output_dim),
            initializer="zeros",
            trainable=False,
        )

    #: Set when the parent loaded this table from a file of the older
    #: layout, which holds it among the parent's own variables.
    loaded_by_parent = False

    def load_own_variables(self, store):
        if len(store.keys()):
            if not self.built:
                self.build()
            super().load_own_variables(store)
        elif self.built and not self.loaded_by_parent:
            # The file's frozen rows are all zero (it holds no table).
            self.embeddings.assign(ops.zeros_like(self.embeddings))
        self.loaded_by_parent = False


@keras.saving.register_keras_serializable(package="keras_posattn")
class TokenEmbedding(keras.layers.Layer):
    """Word embedding whose pretrained rows can stay frozen while OOV rows train.

    Token id 0 is padding (it produces the Keras mask) and id 1 is the
    unknown word, as ``keras.layers.TextVectorization`` numbers them.

    ``trainable_rows`` chooses what trains:

    - ``"all"``: every row (a plain embedding);
    - ``"oov"``: only rows without a pretrained vector; pretrained rows and
      the PAD and UNK rows stay as loaded (the MPSAN and DiSAN released code:
      GloVe rows frozen, OOV training words trained, PAD/UNK zero);
    - ``"none"``: nothing (frozen embeddings, e.g. SPE-CNN).

    Load vectors with ``set_pretrained(matrix, pretrained_rows)`` after the
    layer is built; the vectors are layer weights, so they are saved with the
    model (not in its config).

    Weights: the table (``embeddings``); with ``"oov"`` also a
    (vocabulary_size, 1) gate marking the trainable rows and, only once
    pretrained vectors are loaded, a second, non-trainable table holding the
    frozen rows (``frozen_rows/embeddings``): a model trained without
    pretrained vectors keeps one table. Files written when that second table
    was always there load as before. A copy made with ``from_config`` takes
    ``set_weights`` after ``copy_layer.match_variables(layer)``.

    Args:
        vocabulary_size: number of rows (including PAD and UNK).
        output_dim: embedding size.
        trainable_rows: ``"all"``, ``"oov"`` or ``"none"``.
        embeddings_initializer: initializer for rows before vectors are set
            (default U(-0.05, 0.05), the paper's OOV initialisation).
        embeddings_regularizer: regularizer on the trainable table.
        mask_zero: whether id 0 is masked padding.

    Example:

    >>> import numpy as np
    >>> from keras_posattn.layers import TokenEmbedding
    >>> layer = TokenEmbedding(10, 4, trainable_rows="oov")
    >>> layer(np.array([[2, 3, 0]])).shape
    (1, 3, 4)
    """

    def __init__(
        self,
        vocabulary_size,
        output_dim,
        trainable_rows="all",
        embeddings_initializer=None,
        embeddings_regularizer=None,
        mask_zero=True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if trainable_rows not in TRAINABLE_ROWS:
            raise ValueError(
                f"trainable_rows must be one of {TRAINABLE_ROWS}, got {trainable_rows!r}."
            )
        self.vocabulary_size = int(vocabulary_size)
        self.output_dim = int(output_dim)
        self.trainable_rows = trainable_rows
        if embeddings_initializer is None:
            embeddings_initializer = keras.initializers.RandomUniform(-0.05, 0.05)
        self.embeddings_initializer = keras.initializers.get(embeddings_initializer)
        self.embeddings_regularizer = keras.regularizers.get(embeddings_regularizer)
        self.mask_zero = bool(mask_zero)
        self.supports_masking = self.mask_zero
        if trainable_rows == "oov":
            # Built by set_pretrained only when frozen rows hold vectors.
            self.frozen_table = FrozenRows(
                self.vocabulary_size, self.output_dim, dtype=self.dtype_policy,
                name="frozen_rows",
            )

    def build(self, input_shape=None):
        shape = (self.vocabulary_size, self.output_dim)
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=shape,
            initializer=self.embeddings_initializer,
            regularizer=self.embeddings_regularizer,
            trainable=self.trainable_rows != "none",
        )
        if self.trainable_rows == "oov":
            self.row_is_trainable = self.add_weight(
                name="row_is_trainable",
                shape=(self.vocabulary_size, 1),
                initializer="ones",
                trainable=False,
            )
            # PAD (0) and UNK (1) are frozen zero rows until vectors load.
            gate = np.ones((self.vocabulary_size, 1), dtype="float32")
            gate[:2] = 0.0
            self.row_is_trainable.assign(gate)

    def set_pretrained(self, matrix, pretrained_rows=None):
        """Load a (vocabulary_size, output_dim) matrix.

        Call it before the model is compiled or first run (as the trainer
        does): with ``trainable_rows="oov"`` and frozen rows that are not
        zero, it adds the frozen table, which functions Keras traced earlier
        would not read (``compile()`` makes them anew).

        Args:
            matrix: the initial vectors (OOV rows already initialised).
            pretrained_rows: bool (vocabulary_size,), True for rows that came
                from pretrained vectors. With ``trainable_rows="oov"`` those
                rows, and rows 0 and 1 (PAD, UNK), are frozen.
        """
        matrix = np.asarray(matrix, dtype="float32")
        if matrix.shape != (self.vocabulary_size, self.output_dim):
            raise ValueError(
                f"Embedding matrix has shape {matrix.shape}, expected "
                f"{(self.vocabulary_size, self.output_dim)}."
            )
        if not self.built:
            self.build()
        self.embeddings.assign(matrix)
        if self.trainable_rows == "oov":
            if pretrained_rows is None:
                pretrained_rows = np.zeros(self.vocabulary_size, dtype=bool)
            trainable = ~np.asarray(pretrained_rows, dtype=bool)
            trainable[:2] = False
            self.row_is_trainable.assign(trainable.astype("float32")[:, None])
            self._set_frozen_rows(np.where(trainable[:, None], 0.0, matrix))

    def _set_frozen_rows(self, frozen):
        """Keep the frozen rows' vectors (zero in the trainable rows) in the
        second table, made only when some frozen row is not zero."""
        if self.frozen_table.built or np.any(frozen):
            self._build_frozen_table()
            self.frozen_table.embeddings.assign(frozen)

    def _build_frozen_table(self):
        if not self.frozen_table.built:
            with keras.name_scope(self.name):
                self.frozen_table.build()

    def match_variables(self, other):
        """Give this layer the variables ``other`` (a ``TokenEmbedding`` of
        the same size) has, so that ``set_weights(other_model.get_weights())``
        fits a copy made with ``from_config``: the frozen table exists only
        once pretrained vectors were loaded."""
        if self.trainable_rows == "oov" and getattr(other, "frozen_table", None) is not None:
            if other.frozen_table.built:
                if not self.built:
                    self.build()
                self._build_frozen_table()

    def table(self):
        """The (vocabulary_size, output_dim) matrix the layer looks rows up in:
        with ``trainable_rows="oov"``, the trained OOV rows merged with the
        frozen pretrained ones (what an export needs, as one table)."""
        if self.trainable_rows == "oov":
            merged = self.row_is_trainable * self.embeddings
            if self.frozen_table.built:
                merged = merged + self.frozen_table.embeddings
            return merged
        return ops.convert_to_tensor(self.embeddings)

    def call(self, inputs):
        ids = ops.cast(inputs, "int32")
        outputs = ops.take(self.embeddings, ids, axis=0)
        if self.trainable_rows == "oov":
            # Frozen rows: gate 0, and their vector (zero unless pretrained)
            # from the frozen table; the trainable table gives them no
            # gradient.
            outputs = ops.take(self.row_is_trainable, ids, axis=0) * outputs
            if self.frozen_table.built:
                outputs = outputs + ops.take(self.frozen_table.embeddings, ids, axis=0)
        return ops.cast(outputs, self.compute_dtype)

    def load_own_variables(self, store):
        if self.trainable_rows == "oov" and len(store.keys()) == 3:
            # Written before the frozen table was made only when needed:
            # embeddings, frozen_embeddings (always there), row_is_trainable.
            gate = np.asarray(store["2"])
            self.embeddings.assign(store["0"])
            self.row_is_trainable.assign(gate)
            self._set_frozen_rows(np.where(gate > 0, 0.0, np.asarray(store["1"])))
            self.frozen_table.loaded_by_parent = True
            return
        super().load_own_variables(store)

    def compute_mask(self, inputs, mask=None):
        if not self.mask_zero:
            return None
        return ops.not_equal(inputs, 0)

    def compute_output_shape(self, input_shape):
        return (*input_shape, self.output_dim)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "output_dim": self.output_dim,
                "trainable_rows": self.trainable_rows,
                "embeddings_initializer": keras.initializers.serialize(
                    self.embeddings_initializer
                ),
                "embeddings_regularizer": keras.regularizers.serialize(
                    self.embeddings_regularizer
                ),
                "mask_zero": self.mask_zero,
            }
        )
        return config
