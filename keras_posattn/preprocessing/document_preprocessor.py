import keras
import numpy as np
import tensorflow as tf

from keras_posattn.preprocessing import tokenizer as tokenizer_lib
from keras_posattn.preprocessing.text_preprocessor import OOV_TOKEN
from keras_posattn.preprocessing.text_preprocessor import PAD_TOKEN
from keras_posattn.preprocessing.text_preprocessor import TextPreprocessor

#: Sentence boundaries (RE2, as ``tf.strings.regex_replace`` reads them):
#: a line break or an HTML ``<br>`` tag always ends a sentence ...
LINE_BREAKS = tokenizer_lib.LINE_BREAK_TAG + r"|\r?\n"
#: ... and so does a run of ``.``, ``!`` or ``?`` (with closing quotes or
#: brackets) followed by white space.
SENTENCE_ENDS = r"([.!?]+[\"')\]]*)\s+"
#: The character the boundaries are marked with before splitting (ASCII
#: record separator: never part of a text worth keeping).
_SEPARATOR = "\x1e"


def split_sentences(documents):
    """Split each document into sentences, with TensorFlow string ops.

    Line breaks and ``<br />`` tags end a sentence, and so does ``.``, ``!``
    or ``?`` (repeated, maybe followed by a closing quote or bracket) before
    white space: ``"Good. Really good!"`` -> ``["Good.", "Really good!"]``.
    Abbreviations ("Mr. Smith") are split too; the models see two short
    sentences. Empty pieces are kept here (the preprocessor drops sentences
    without tokens).

    Args:
        documents: string tensor (batch,).

    Returns:
        ``tf.RaggedTensor`` of strings (batch, sentences).
    """
    documents = tf.strings.regex_replace(documents, LINE_BREAKS, _SEPARATOR)
    documents = tf.strings.regex_replace(documents, SENTENCE_ENDS, "\\1" + _SEPARATOR)
    return tf.strings.split(documents, _SEPARATOR)


def _pieces_per_sentence(lengths, piece_length):
    """Pieces each sentence of ``lengths`` tokens is read as (0 for an empty one)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if piece_length is None:
        return np.minimum(lengths, 1)
    return -(-lengths // int(piece_length))


def _piece_lengths(lengths, piece_length):
    """The token count of every piece of the non-empty sentences of ``lengths``."""
    lengths = np.asarray(lengths, dtype=np.int64)
    lengths = lengths[lengths > 0]
    if piece_length is None:
        return lengths
    k = int(piece_length)
    full = np.repeat(k, int(np.sum((lengths - 1) // k)))
    return np.concatenate([full, lengths - k * ((lengths - 1) // k)])


@keras.saving.register_keras_serializable(package="keras_posattn")
class DocumentPreprocessor(TextPreprocessor):
    """Turns raw documents into (sentences, words) token ids, inside the graph.

    The preprocessor of the hierarchical zoo models (HCAN, HAN): documents
    are split into sentences (``split_sentences``: TensorFlow string ops, so
    the exported SavedModel still takes one raw string per document and TF
    Serving needs nothing else), each sentence is standardised, split and
    looked up exactly as ``TextPreprocessor`` does a text (0 = padding,
    1 = unknown word), sentences without a token are dropped, a sentence
    longer than ``piece_length`` words is read as consecutive pieces of at
    most ``piece_length`` words (text without sentence punctuation, such as
    R8's, stays hierarchical instead of becoming one long "sentence"), and
    the result is truncated to ``max_sentences`` sentences of at most
    ``max_length`` words. A batch is padded with zeros to its longest document and longest
    sentence (at least one of each, so an empty string is a valid input
    that the models map to finite outputs), or to ``(max_sentences,
    max_length)`` with ``pad_to_max_length=True``.

    Build one from training documents with ``DocumentPreprocessor.from_texts``
    (the same deterministic vocabulary as ``TextPreprocessor``, counted over
    the sentences) or from a vocabulary.

    Args:
        vocabulary: list of tokens, ``""`` (padding) and ``"[UNK]"`` first.
        max_length: words kept per sentence.
        max_sentences: sentences kept per document.
        standardize, split: as for ``TextPreprocessor`` (applied to each
            sentence).
        pad_to_max_length: pad every batch to ``(max_sentences, max_length)``.
        piece_length: longer sentences are cut into pieces of this many
            words (the last one shorter) before ``max_sentences`` applies;
            None keeps each sentence whole (truncated at ``max_length``).

    Call arguments:
        inputs: string tensor (batch,) (or (batch, 1), or a scalar).

    Returns:
        int32 token ids (batch, sentences, words).

    Example:

    >>> from keras_posattn.preprocessing import DocumentPreprocessor
    >>> pre = DocumentPreprocessor.from_texts(["A good film. Truly good!", "A bad film."])
    >>> pre(["A good film. Truly good!", ""]).numpy().tolist()
    [[[2, 4, 3], [6, 4, 0]], [[0, 0, 0], [0, 0, 0]]]
    """

    #: Dimensions of one example's model input: (sentences, words).
    input_rank = 2

    def __init__(
        self,
        vocabulary,
        max_length=64,
        max_sentences=32,
        standardize=tokenizer_lib.DEFAULT_STANDARDIZE,
        split="whitespace",
        pad_to_max_length=False,
        piece_length=None,
        **kwargs,
    ):
        max_sentences = int(max_sentences)
        if max_sentences < 1:
            raise ValueError(f"max_sentences must be >= 1, got {max_sentences}.")
        if piece_length is not None:
            piece_length = int(piece_length)
            if piece_length < 1:
                raise ValueError(f"piece_length must be >= 1 or None, got {piece_length}.")
        self.max_sentences = max_sentences
        self.piece_length = piece_length
        super().__init__(vocabulary, max_length=max_length, standardize=standardize,
                         split=split, pad_to_max_length=pad_to_max_length, **kwargs)

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
        length_percentile=95,
        max_sentences=None,
        sentences_percentile=95,
        sentences_cap=64,
        piece_length=None,
        **kwargs,
    ):
        """A preprocessor whose vocabulary is counted on the documents' sentences.

        Args:
            texts: training documents.
            max_length: words kept per sentence. None: the
                ``length_percentile`` (default 95) of the training
                sentences' lengths, capped at ``length_cap``.
            max_sentences: sentences kept per document. None: the
                ``sentences_percentile`` (default 95) of the training
                documents' sentence counts, capped at ``sentences_cap``.
            piece_length: as for the constructor; the percentiles above
                count pieces.
            max_tokens, min_count, standardize, split: as for
                ``TextPreprocessor.from_texts``.
            **kwargs: other constructor arguments.
        """
        texts = cls._check_texts(texts)
        sentences = split_sentences(tf.constant(texts, dtype=tf.string))
        counts, lengths = tokenizer_lib.count_tokens(
            [s.decode("utf-8") for s in sentences.flat_values.numpy()], standardize, split)
        words = cls._words(counts, max_tokens, min_count, len(texts))
        # Sentences (pieces) per document, the empty ones (no token) left out.
        document = np.repeat(np.arange(len(texts)), sentences.row_lengths().numpy())
        pieces = _pieces_per_sentence(lengths, piece_length)
        per_document = np.bincount(document, weights=pieces, minlength=len(texts)).astype(int)
        return cls(
            vocabulary=[PAD_TOKEN, OOV_TOKEN] + words,
            max_length=cls.automatic_length(_piece_lengths(lengths, piece_length), max_length,
                                            length_percentile, length_cap),
            max_sentences=cls.automatic_length(per_document, max_sentences,
                                               sentences_percentile, sentences_cap),
            standardize=standardize,
            split=split,
            piece_length=piece_length,
            **kwargs,
        )

    # --- the graph --------------------------------------------------------

    def _ragged(self, inputs):
        """Ragged int32 ids (batch, None, None), empty sentences dropped, truncated."""
        inputs = tf.convert_to_tensor(inputs, dtype=tf.string)
        if inputs.shape.rank == 0:
            inputs = tf.reshape(inputs, [1])
        elif inputs.shape.rank == 2:
            inputs = tf.reshape(inputs, [-1])
        sentences = split_sentences(inputs)
        ids = self._vectorizer(self._standardize(sentences.flat_values))
        # Each token's piece: a sentence of L tokens is ceil(L / piece_length)
        # pieces (one without piece_length), so a sentence without a token
        # has none and is dropped. Done on the flat tokens: a ragged
        # boolean_mask would densify (sentences in the batch) x (longest
        # sentence) first, which one hostile 100k-token document makes 20 GB.
        lengths = tf.cast(ids.row_lengths(), tf.int64)
        rows = ids.value_rowids()
        if self.piece_length is None:
            pieces = tf.minimum(lengths, 1)
            offset = tf.zeros_like(rows)
        else:
            k = tf.constant(self.piece_length, tf.int64)
            pieces = (lengths + k - 1) // k
            position = tf.range(tf.size(rows, out_type=tf.int64)) - tf.gather(
                tf.cast(ids.row_starts(), tf.int64), rows)
            offset = position // k
        piece = tf.gather(tf.cumsum(pieces, exclusive=True), rows) + offset
        ids = tf.RaggedTensor.from_value_rowids(ids.flat_values, piece,
                                                nrows=tf.reduce_sum(pieces), validate=False)
        per_document = tf.math.unsorted_segment_sum(pieces, sentences.value_rowids(),
                                                    sentences.nrows())
        ids = tf.RaggedTensor.from_row_lengths(ids, per_document, validate=False)
        return tf.cast(ids[:, : self.max_sentences, : self.max_length], tf.int32)

    def call(self, inputs):
        ids = self._ragged(inputs)
        if self.pad_to_max_length:
            return ids.to_tensor(default_value=0,
                                 shape=[None, self.max_sentences, self.max_length])
        dense = ids.to_tensor(default_value=0)
        # At least one (padding) sentence of one word: an empty document is valid.
        shape = tf.shape(dense)
        return tf.pad(dense, [[0, 0], [0, tf.maximum(0, 1 - shape[1])],
                              [0, tf.maximum(0, 1 - shape[2])]])

    def compute_output_spec(self, inputs):
        batch = inputs.shape[0] if len(inputs.shape) else 1
        if self.pad_to_max_length:
            return keras.KerasTensor((batch, self.max_sentences, self.max_length), dtype="int32")
        return keras.KerasTensor((batch, None, None), dtype="int32")

    @classmethod
    def model_input(cls):
        """The ``keras.Input`` of a model fed by documents: (sentences, words)."""
        return keras.Input(shape=(None, None), dtype="int32", name=cls.input_name)

    def model_sizes(self):
        return {"max_length": self.max_length, "max_sentences": self.max_sentences}

    # --- Python-side helpers ------------------------------------------------

    def tokenize(self, texts):
        """Tokens of each document as Python strings, sentences concatenated
        (for bag-of-words baselines)."""
        texts = list(texts)
        if not texts:
            return []
        sentences = split_sentences(tf.constant(texts, dtype=tf.string))
        tokens = tokenizer_lib.tokenize(
            [s.decode("utf-8") for s in sentences.flat_values.numpy()], self.standardize,
            self.split)
        splits = sentences.row_splits.numpy()
        return [[t for sentence in tokens[a:b] for t in sentence]
                for a, b in zip(splits[:-1], splits[1:])]

    def display_tokens(self, ids, words=4):
        """One label per real sentence of one example's ids (its first
        ``words`` words), for sentence-level attention images."""
        ids = np.asarray(ids)
        if ids.ndim == 1:
            ids = ids[None]
        labels = []
        for row in ids:
            real = [self.vocabulary[i] for i in row if i != 0]
            if real:
                more = " …" if len(real) > words else ""
                labels.append(" ".join(real[:words]) + more)
        return labels

    def dataset(self, texts, labels, batch_size, shuffle_seed=None, buckets=True):
        """A ``tf.data`` pipeline of (token ids (b, S, W), labels) batches.

        As ``TextPreprocessor.dataset``: ids computed once and cached,
        seeded shuffling. With ``buckets``, documents with similar numbers of
        sentences are batched together (``group_by_window``) and each batch
        is padded to one of a few sentence counts and one of a few sentence
        lengths (``bucket_widths``), so few shapes get compiled; without,
        every batch is padded to ``(max_sentences, max_length)``.
        """
        ids = self.token_ids(texts)
        labels = np.asarray(labels)
        ds = tf.data.Dataset.from_tensor_slices((ids, labels)).cache()
        if shuffle_seed is not None:
            ds = ds.shuffle(len(labels), seed=shuffle_seed, reshuffle_each_iteration=True)
        if not buckets:
            shape = [None, self.max_sentences, self.max_length]
            ds = ds.ragged_batch(batch_size).map(
                lambda x, y: (x.to_tensor(default_value=0, shape=shape), y))
            return ds.prefetch(tf.data.AUTOTUNE)
        sentence_widths = self.bucket_widths(smallest=4, maximum=self.max_sentences)
        word_widths = self.bucket_widths()
        boundaries = tf.constant(sentence_widths, tf.int64)

        def key(x, y):
            return tf.reduce_sum(tf.cast(boundaries < tf.maximum(x.nrows(), 1), tf.int64))

        def pad(x, y):
            dense = x.to_tensor(default_value=0)
            shape = tf.shape(dense)
            s = self._bucket_width(shape[1], sentence_widths)
            w = self._bucket_width(shape[2], word_widths)
            return tf.pad(dense, [[0, 0], [0, s - shape[1]], [0, w - shape[2]]]), y

        ds = ds.group_by_window(key_func=key, window_size=batch_size,
                                reduce_func=lambda _, window: window.ragged_batch(batch_size))
        ds = ds.map(pad)
        batches = self.count_batches(ids.row_lengths().numpy(), sentence_widths, batch_size)
        ds = ds.apply(tf.data.experimental.assert_cardinality(batches))
        return ds.prefetch(tf.data.AUTOTUNE)

    def get_config(self):
        config = super().get_config()
        config["max_sentences"] = self.max_sentences
        config["piece_length"] = self.piece_length
        return config
