import math

import keras
import numpy as np
import tensorflow as tf

from keras_posattn.preprocessing import tokenizer as tokenizer_lib

OOV_TOKEN = tokenizer_lib.OOV_TOKEN
PAD_TOKEN = tokenizer_lib.PAD_TOKEN


@keras.saving.register_keras_serializable(package="keras_posattn")
class TextPreprocessor(keras.layers.Layer):
    """Turns raw strings into padded token ids, inside the TensorFlow graph.

    The preprocessor of the flat (sentence and short-document) zoo models: it
    sits between raw strings and a model's ``token_ids`` input, the same layer
    in training, in the saved ``classifier.keras`` and in the SavedModel
    served by TF Serving, so the three can never disagree. Texts are
    standardised by the library's tokenizer (``tokenizer.standardize_strings``:
    by default Unicode lower case, punctuation a word boundary), split on
    white space, looked up in a fixed vocabulary (0 = padding,
    1 = unknown word), truncated to ``max_length`` tokens and padded with
    zeros to the longest text of the batch (at least one position, so an
    empty string is a valid input), or to ``max_length`` with
    ``pad_to_max_length=True``. Every zoo model gives the same outputs
    whatever the padding, so the shorter batches only save time.

    Build one from training texts with ``TextPreprocessor.from_texts(...)``
    (deterministic vocabulary: frequency, then alphabetical) or from a saved
    vocabulary with ``TextPreprocessor(vocabulary=[...])``.

    A preprocessor also prepares training data: ``token_ids(texts)`` gives the
    ragged ids (the same code path as ``call``), ``dataset(texts, labels,
    batch_size)`` a cached, shuffled, length-bucketed ``tf.data`` pipeline, and
    ``tokenize(texts)`` the tokens as Python strings (for baselines and
    attention images).

    Args:
        vocabulary: list of tokens, ``""`` (padding) and ``"[UNK]"`` first.
        max_length: the longest token sequence a model receives; longer texts
            are truncated.
        standardize: one of ``tokenizer.STANDARDIZE_OPTIONS``: the default
            ``"lower_and_split_punctuation"`` (punctuation separates words),
            ``"split_punctuation"``, ``"lower_and_strip_punctuation"``
            (``TextVectorization``'s: punctuation deleted, words merged),
            ``"lower"``, ``"strip_punctuation"`` or None.
        split: ``"whitespace"``, ``"character"`` or None.
        pad_to_max_length: pad every batch to ``max_length`` instead of to its
            longest text.

    Call arguments:
        inputs: string tensor (batch,) (or (batch, 1), or a scalar).

    Returns:
        int32 token ids (batch, n), ``1 <= n <= max_length``.

    Example:

    >>> from keras_posattn.preprocessing import TextPreprocessor
    >>> pre = TextPreprocessor.from_texts(["a good film", "a bad film"], max_length=8)
    >>> pre(["a good film", ""]).numpy().tolist()
    [[2, 5, 3], [0, 0, 0]]
    """

    #: Dimensions of one example's model input: (tokens,).
    input_rank = 1
    #: Name of the model input this preprocessor feeds.
    input_name = "token_ids"
    #: Whether its graph holds tensorflow-text ops (core TensorFlow only here).
    needs_tensorflow_text = False

    def __init__(
        self,
        vocabulary,
        max_length=64,
        standardize=tokenizer_lib.DEFAULT_STANDARDIZE,
        split="whitespace",
        pad_to_max_length=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        tokenizer_lib._check_options(standardize, split)
        vocabulary = [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in vocabulary]
        if vocabulary[:2] != [PAD_TOKEN, OOV_TOKEN]:
            raise ValueError(
                "vocabulary must start with the padding token '' and '[UNK]', got "
                f"{vocabulary[:2]!r}."
            )
        if len(vocabulary) < 3:
            raise ValueError("vocabulary needs at least one word besides '' and '[UNK]'.")
        max_length = int(max_length)
        if max_length < 1:
            raise ValueError(f"max_length must be >= 1, got {max_length}.")
        self.vocabulary = vocabulary
        self.max_length = max_length
        self.standardize = standardize
        self.split = split
        self.pad_to_max_length = bool(pad_to_max_length)
        # The vectorizer only splits and looks up: the standardisation is the
        # tokenizer's own (``standardize_strings``), run before it.
        self._vectorizer = keras.layers.TextVectorization(
            standardize=None,
            split=split,
            output_mode="int",
            vocabulary=vocabulary[2:],
            ragged=True,
            name="vectorizer",
        )
        # A TextVectorization made with vocabulary= must be called once before
        # ExportArchive can track it.
        self._vectorizer(tf.constant(["warm up"]))
        self.built = True

    # --- construction -----------------------------------------------------

    @classmethod
    def from_texts(
        cls,
        texts,
        max_length=None,
        max_tokens=None,
        min_count=1,
        standardize=tokenizer_lib.DEFAULT_STANDARDIZE,
        split="whitespace",
        length_cap=None,
        length_percentile=None,
        keep_longest_up_to=None,
        **kwargs,
    ):
        """A preprocessor whose vocabulary is counted on ``texts``.

        Args:
            texts: training texts.
            max_length: tokens kept per text. None: the longest training
                text (or the ``length_percentile`` of the lengths), capped at
                ``length_cap``.
            max_tokens: vocabulary size cap, PAD and UNK included.
            min_count: words seen fewer times become ``[UNK]``.
            standardize, split: as for the layer.
            length_cap: upper bound for an automatic ``max_length``.
            length_percentile: percentile (0-100) of the training lengths
                used as automatic ``max_length``.
            keep_longest_up_to: with ``length_percentile``, keep the longest
                text whole when it has at most this many tokens (short texts
                lose nothing; long documents are cut at the percentile).
            **kwargs: other constructor arguments.
        """
        texts = cls._check_texts(texts)
        counts, lengths = tokenizer_lib.count_tokens(texts, standardize, split)
        words = cls._words(counts, max_tokens, min_count, len(texts))
        max_length = cls.automatic_length(lengths, max_length, length_percentile, length_cap,
                                          keep_longest_up_to)
        return cls(
            vocabulary=[PAD_TOKEN, OOV_TOKEN] + words,
            max_length=max_length,
            standardize=standardize,
            split=split,
            **kwargs,
        )

    @staticmethod
    def _check_texts(texts):
        if isinstance(texts, str):
            raise TypeError("texts must be a sequence of strings, not one string.")
        texts = list(texts)
        if not texts:
            raise ValueError("cannot build a vocabulary from zero texts.")
        return texts

    @staticmethod
    def _words(counts, max_tokens, min_count, num_texts):
        words = tokenizer_lib.build_vocabulary(counts, max_tokens=max_tokens, min_count=min_count)
        if not words:
            raise ValueError(
                f"no token occurs at least min_count={min_count} times in the {num_texts} texts."
            )
        return words

    @staticmethod
    def automatic_length(lengths, length=None, percentile=None, cap=None,
                         keep_longest_up_to=None):
        """``length`` if given, else the longest of ``lengths`` (or their
        ``percentile``, 0-100, unless the longest is at most
        ``keep_longest_up_to``), capped at ``cap``; at least 1."""
        if length is not None:
            return int(length)
        lengths = np.asarray(lengths)
        if not lengths.size:
            return 1
        if keep_longest_up_to is not None and lengths.max() <= keep_longest_up_to:
            percentile = None
        if percentile is not None:
            if not 0 <= percentile <= 100:
                raise ValueError(f"length_percentile must be in [0, 100], got {percentile}.")
            length = math.ceil(float(np.percentile(lengths, percentile)) - 1e-9)
        else:
            length = int(lengths.max())
        if cap is not None:
            length = min(length, int(cap))
        return max(1, int(length))

    # --- the graph --------------------------------------------------------

    @property
    def vocabulary_size(self):
        return len(self.vocabulary)

    def _ragged(self, inputs):
        """Ragged int32 ids (batch, None), truncated to ``max_length``."""
        inputs = tf.convert_to_tensor(inputs, dtype=tf.string)
        if inputs.shape.rank == 0:
            inputs = tf.reshape(inputs, [1])
        elif inputs.shape.rank == 2:
            inputs = tf.reshape(inputs, [-1])
        ids = self._vectorizer(self._standardize(inputs))
        return tf.cast(ids[:, : self.max_length], tf.int32)

    def _standardize(self, inputs):
        return tokenizer_lib.standardize_strings(inputs, self.standardize)

    def __call__(self, inputs, *args, **kwargs):
        # Accept plain Python strings and lists of them, as TextVectorization does.
        if isinstance(inputs, (str, bytes, list, tuple, np.ndarray)):
            inputs = tf.constant(inputs, dtype=tf.string)
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs):
        ids = self._ragged(inputs)
        if self.pad_to_max_length:
            return ids.to_tensor(default_value=0, shape=[None, self.max_length])
        dense = ids.to_tensor(default_value=0)
        # At least one (padding) position: a batch of empty strings is valid.
        missing = tf.maximum(0, 1 - tf.shape(dense)[1])
        return tf.pad(dense, [[0, 0], [0, missing]])

    def compute_output_spec(self, inputs):
        width = self.max_length if self.pad_to_max_length else None
        batch = inputs.shape[0] if len(inputs.shape) else 1
        return keras.KerasTensor((batch, width), dtype="int32")

    @classmethod
    def model_input(cls):
        """The ``keras.Input`` of a model fed by this kind of preprocessor."""
        return keras.Input(shape=(None,), dtype="int32", name=cls.input_name)

    # --- Python-side helpers ------------------------------------------------

    def tokenize(self, texts):
        """Tokens of each text as Python strings (before the vocabulary)."""
        return tokenizer_lib.tokenize(list(texts), self.standardize, self.split)

    def token_ids(self, texts, batch_size=4096):
        """Ragged int32 ids of ``texts`` (eager), truncated, unpadded."""
        texts = list(texts)
        parts = [
            self._ragged(tf.constant(texts[i : i + batch_size], dtype=tf.string))
            for i in range(0, len(texts), batch_size)
        ]
        if not parts:
            return tf.RaggedTensor.from_row_lengths(tf.zeros([0], tf.int32), tf.zeros([0], tf.int64))
        return tf.concat(parts, axis=0)

    def display_tokens(self, ids):
        """The vocabulary words of one example's ids, padding dropped."""
        ids = np.asarray(ids).reshape(-1)
        return [self.vocabulary[i] for i in ids if i != 0]

    def bucket_widths(self, smallest=8, growth=2.0, maximum=None):
        """Padded lengths the training batches are bucketed to.

        Powers of two from ``smallest`` below ``maximum`` (default
        ``max_length``), then ``maximum``; a width within 25% of the next is
        dropped (it would cost one more compiled shape for little saving).
        """
        maximum = int(maximum or self.max_length)
        widths = []
        width = smallest
        while width < maximum:
            widths.append(int(width))
            width *= growth
        widths.append(maximum)
        kept = [w for w, nxt in zip(widths, widths[1:]) if nxt >= 1.25 * w]
        return kept + [maximum]

    @staticmethod
    def count_batches(lengths, widths, batch_size):
        """Batches a bucketed pipeline makes: each bucket's count of
        examples (by ``lengths``, bucketed to ``widths``), rounded up."""
        bucket = np.searchsorted(widths, np.maximum(np.asarray(lengths), 1))
        counts = np.bincount(bucket, minlength=len(widths))
        return int(sum(-(-int(c) // batch_size) for c in counts))

    def model_sizes(self):
        """The model arguments this preprocessor's outputs fix (the trainer
        passes them to ``zoo.build``)."""
        return {"max_length": self.max_length}

    def dataset(self, texts, labels, batch_size, shuffle_seed=None, buckets=True):
        """A ``tf.data`` pipeline of (token ids, labels) batches.

        The ids are computed once (``token_ids``) and cached; training data
        is shuffled with ``shuffle_seed`` (a new order each epoch, the same
        sequence of orders for the same seed); with ``buckets`` examples of
        similar length are batched together and each batch is padded to one
        of a few ``bucket_widths()`` - attention then costs what the batch's
        texts need, not what the corpus's longest needs, and the number of
        distinct shapes (one compiled step each) stays small. Without
        ``buckets`` every batch is padded to ``max_length``.
        """
        ids = self.token_ids(texts)
        labels = np.asarray(labels)
        ds = tf.data.Dataset.from_tensor_slices((ids, labels))
        # Slices of a ragged tensor come out as ragged specs of rank 0; an
        # identity map turns them into the dense tensors padded_batch needs.
        ds = ds.map(lambda x, y: (x, y)).cache()
        if shuffle_seed is not None:
            ds = ds.shuffle(len(labels), seed=shuffle_seed, reshuffle_each_iteration=True)
        if not buckets:
            ds = ds.padded_batch(batch_size, padded_shapes=([self.max_length], []))
        else:
            widths = self.bucket_widths()
            ds = ds.bucket_by_sequence_length(
                element_length_func=lambda x, y: tf.shape(x)[0],
                bucket_boundaries=[w + 1 for w in widths[:-1]],
                bucket_batch_sizes=[batch_size] * len(widths),
                padded_shapes=([None], []),
                no_padding=False,
            )
            ds = ds.map(lambda x, y: (self._pad_to_bucket(x, widths), y))
            # Bucketing hides the number of batches from tf.data; it is known
            # (each bucket's count, rounded up to batches), and Keras wants it
            # for its progress bar and to not warn that the data "ran out".
            batches = self.count_batches(ids.row_lengths().numpy(), widths, batch_size)
            ds = ds.apply(tf.data.experimental.assert_cardinality(batches))
        return ds.prefetch(tf.data.AUTOTUNE)

    @staticmethod
    def _bucket_width(n, widths):
        """The smallest of ``widths`` >= max(n, 1) (a scalar tensor)."""
        widths_t = tf.constant(widths, tf.int32)
        return tf.reduce_min(tf.boolean_mask(widths_t, widths_t >= tf.maximum(n, 1)))

    @classmethod
    def _pad_to_bucket(cls, x, widths):
        """Pad a batch (b, n) to the smallest bucket width >= max(n, 1)."""
        width = cls._bucket_width(tf.shape(x)[1], widths)
        return tf.pad(x, [[0, 0], [0, width - tf.shape(x)[1]]])

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary": list(self.vocabulary),
                "max_length": self.max_length,
                "standardize": self.standardize,
                "split": self.split,
                "pad_to_max_length": self.pad_to_max_length,
            }
        )
        return config
