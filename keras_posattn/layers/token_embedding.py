import numpy as np
import keras
from keras import ops

TRAINABLE_ROWS = ("all", "oov", "none")


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
            self.frozen_embeddings = self.add_weight(
                name="frozen_embeddings",
                shape=shape,
                initializer="zeros",
                trainable=False,
            )
            self.row_is_trainable = self.add_weight(
                name="row_is_trainable",
                shape=(self.vocabulary_size, 1),
                initializer="ones",
                trainable=False,
            )
            # PAD (0) and UNK (1) read the frozen zero rows until vectors load.
            gate = np.ones((self.vocabulary_size, 1), dtype="float32")
            gate[:2] = 0.0
            self.row_is_trainable.assign(gate)

    def set_pretrained(self, matrix, pretrained_rows=None):
        """Load a (vocabulary_size, output_dim) matrix.

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
            self.frozen_embeddings.assign(matrix)
            self.row_is_trainable.assign(trainable.astype("float32")[:, None])

    def table(self):
        """The (vocabulary_size, output_dim) matrix the layer looks rows up in:
        with ``trainable_rows="oov"``, the trained OOV rows merged with the
        frozen pretrained ones (what an export needs, as one table)."""
        if self.trainable_rows == "oov":
            gate = self.row_is_trainable
            return gate * self.embeddings + (1.0 - gate) * self.frozen_embeddings
        return ops.convert_to_tensor(self.embeddings)

    def call(self, inputs):
        ids = ops.cast(inputs, "int32")
        if self.trainable_rows == "oov":
            train = ops.take(self.embeddings, ids, axis=0)
            frozen = ops.take(self.frozen_embeddings, ids, axis=0)
            gate = ops.take(self.row_is_trainable, ids, axis=0)
            outputs = gate * train + (1.0 - gate) * frozen
        else:
            outputs = ops.take(self.embeddings, ids, axis=0)
        return ops.cast(outputs, self.compute_dtype)

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
