"""Subword (WordPiece) token ids inside the graph, with tensorflow-text.

``WordPiecePreprocessor`` is a ``TextPreprocessor`` whose words are split
further into WordPiece subwords (``"unfilmable"`` -> ``un ##film ##able``),
so a word never seen in training still reaches the model as known pieces
instead of ``[UNK]``. It is meant for models trained without pretrained word
vectors (pretrained vectors exist for whole words, not for pieces).

The text is standardised and split on white space by the library's own
tokenizer (``tokenizer.standardize_strings``, default
``"lower_and_split_punctuation"``), then each word is cut into the longest
vocabulary pieces from the left by tensorflow-text's
``FastWordpieceTokenizer`` (op ``FastWordpieceTokenizeWithOffsets``, in
tensorflow-text since 2.7); a word that cannot be cut into vocabulary pieces
(a character never seen in training) becomes ``[UNK]`` as a whole.

tensorflow-text is an optional dependency (``pip install
'keras-posattn[wordpiece]'``), imported only when a ``WordPiecePreprocessor``
is made. A SavedModel exported from a classifier using it holds
tensorflow-text ops: load it after ``import tensorflow_text`` (or
``require_tensorflow_text()``), and serve it with a TF Serving build that
links those ops (see the README, "Subword (WordPiece) tokenization").
"""

import keras
import tensorflow as tf

from keras_posattn.preprocessing import tokenizer as tokenizer_lib
from keras_posattn.preprocessing.text_preprocessor import OOV_TOKEN
from keras_posattn.preprocessing.text_preprocessor import PAD_TOKEN
from keras_posattn.preprocessing.text_preprocessor import TextPreprocessor

#: Vocabulary size (padding and ``[UNK]`` included) learned when
#: ``from_texts`` is given no ``max_tokens``.
DEFAULT_MAX_TOKENS = 8000
#: The prefix of a piece that continues a word (BERT's).
SUFFIX_INDICATOR = "##"
#: Longer words (in UTF-8 bytes) become ``[UNK]`` (FastWordpieceTokenizer's default).
MAX_BYTES_PER_WORD = 100
#: The most distinct characters the learned vocabulary spells words with
#: (the WordPiece learner's default; fewer when ``max_tokens`` is small).
MAX_ALPHABET = 1000
INSTALL_HINT = "pip install 'keras-posattn[wordpiece]'"


def require_tensorflow_text():
    """Import tensorflow-text (registering its ops) and return the module.

    Call it before ``tf.saved_model.load`` of an export whose metadata says
    ``"requires_tensorflow_text": true``.

    Raises:
        ImportError: tensorflow-text is not installed (the message names the
            pip command).
    """
    try:
        import tensorflow_text
    except ImportError as e:
        raise ImportError(
            f"WordPiece tokenization needs tensorflow-text: {INSTALL_HINT}") from e
    return tensorflow_text


def learn_vocabulary(counts, max_tokens=DEFAULT_MAX_TOKENS, min_count=1):
    """A WordPiece vocabulary learned from word counts, deterministically.

    tensorflow-text's own learner (``wordpiece_tokenizer_learner_lib.learn``,
    what ``bert_vocab_from_dataset`` runs after BERT's splitting; here the
    words are the library's own) with ``[UNK]`` reserved: it searches the
    subword frequency threshold (at least ``min_count``) that gives at most
    ``max_tokens - 1`` tokens (within 5%), keeping every single character of
    the words it learns from, alone and as a suffix (``##c``), so any word
    spelled with them splits into known pieces. When the search cannot get
    under the size, the least frequent longer pieces are cut. The words are
    given to the learner sorted (frequency, then alphabetical), and the
    learner orders its output the same way, so the same texts always give
    the same vocabulary. Words containing ``##`` (possible with the
    standardisations that keep symbols) are left out: ``##`` marks a piece
    that continues a word. The learner is pure Python: it took 6 s of CPU on
    TREC's 4,907 training questions, 20 s on MR's 8,635 sentences and 131 s
    on IMDB's 22,500 reviews (71,597 distinct words) here.

    Args:
        counts: word frequencies (a ``Counter``, e.g. from
            ``tokenizer.count_tokens``).
        max_tokens: vocabulary size, padding and ``[UNK]`` included.
        min_count: the lowest frequency of a piece longer than one character.

    Returns:
        ``["", "[UNK]", pieces...]``, at most ``max_tokens`` long.
    """
    max_tokens = int(max_tokens)
    if max_tokens < 4:
        raise ValueError(f"max_tokens must be at least 4 (padding, [UNK], a character and "
                         f"its suffix form), got {max_tokens}.")
    if min_count < 1:
        raise ValueError(f"min_count must be >= 1, got {min_count}.")
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

    words = sorted(((w, int(n)) for w, n in counts.items()
                    if w not in (PAD_TOKEN, OOV_TOKEN) and SUFFIX_INDICATOR not in w),
                   key=lambda item: (-item[1], item[0]))
    if not words:
        raise ValueError("no word to learn a WordPiece vocabulary from.")
    budget = max_tokens - 1  # the padding token is ours, not the learner's
    # Each character takes two entries (c and ##c): keep the alphabet within the budget.
    alphabet = min(MAX_ALPHABET, (budget - 1) // 2)
    learned = learner.learn(words, budget, [OOV_TOKEN], lower_thresh=int(min_count),
                            max_unique_chars=alphabet, joiner=SUFFIX_INDICATOR)
    if len(learned) < 2:
        raise ValueError(
            f"max_tokens={max_tokens} is too small: no training word is spelled with the "
            f"{alphabet} most frequent character(s) it leaves room for.")
    if len(learned) > budget:
        # Keep [UNK] and the alphabet (c and ##c), then the most frequent pieces.
        base = {t for t in learned
                if t == OOV_TOKEN or len(t.removeprefix(SUFFIX_INDICATOR)) == 1}
        kept = base | set([t for t in learned if t not in base][: budget - len(base)])
        learned = [t for t in learned if t in kept]
    return [PAD_TOKEN] + learned


@keras.saving.register_keras_serializable(package="keras_posattn")
class WordPiecePreprocessor(TextPreprocessor):
    """Turns raw strings into padded WordPiece ids, inside the TensorFlow graph.

    The same interface and outputs as ``TextPreprocessor`` (int32 ids
    (batch, n), ``1 <= n <= max_length``, 0 = padding, 1 = unknown, padded
    to the batch's longest text or to ``max_length``), but its tokens are
    WordPiece subwords: each word of the standardised text is cut into the
    longest vocabulary pieces from the left (``FastWordpieceTokenizer``),
    continuation pieces written ``##piece``; ``max_length`` counts pieces.

    Build one from training texts with ``WordPiecePreprocessor.from_texts``
    (the vocabulary is learned with tensorflow-text's WordPiece learner, see
    ``learn_vocabulary``) or from a saved vocabulary.

    Args:
        vocabulary: list of tokens, ``""`` (padding) and ``"[UNK]"`` first,
            continuation pieces prefixed with ``"##"``.
        max_length: pieces kept per text.
        standardize: one of ``tokenizer.STANDARDIZE_OPTIONS``.
        split: ``"whitespace"`` (the only option: pieces are cut from words).
        pad_to_max_length: pad every batch to ``max_length``.

    Example:

    >>> from keras_posattn.preprocessing import WordPiecePreprocessor
    >>> pre = WordPiecePreprocessor.from_texts(["a good film", "a bad film"], max_length=8)
    >>> pre.tokenize(["a goodbad film", "a filmy film"])
    [['a', 'good', '##b', '##a', '##d', 'film'], ['a', '[UNK]', 'film']]
    >>> pre(["a goodbad film", ""]).numpy().tolist()
    [[2, 22, 13, 12, 14, 11], [0, 0, 0, 0, 0, 0]]
    """

    #: The SavedModel of a classifier using it holds tensorflow-text ops.
    needs_tensorflow_text = True

    def __init__(
        self,
        vocabulary,
        max_length=64,
        standardize=tokenizer_lib.DEFAULT_STANDARDIZE,
        split="whitespace",
        pad_to_max_length=False,
        **kwargs,
    ):
        if split != "whitespace":
            raise ValueError(
                f"WordPiecePreprocessor cuts words into pieces: split must be 'whitespace', "
                f"got {split!r}.")
        tensorflow_text = require_tensorflow_text()
        # Skip TextPreprocessor's word lookup (a TextVectorization): the
        # pieces are looked up by the WordPiece model below.
        keras.layers.Layer.__init__(self, **kwargs)
        tokenizer_lib._check_options(standardize, split)
        vocabulary = [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in vocabulary]
        if vocabulary[:2] != [PAD_TOKEN, OOV_TOKEN] or len(vocabulary) < 3:
            raise ValueError(
                "vocabulary must be '' (padding), '[UNK]' and at least one piece, got "
                f"{vocabulary[:3]!r}...")
        if len(set(vocabulary)) != len(vocabulary):
            raise ValueError("vocabulary has repeated tokens.")
        max_length = int(max_length)
        if max_length < 1:
            raise ValueError(f"max_length must be >= 1, got {max_length}.")
        self.vocabulary = vocabulary
        self.max_length = max_length
        self.standardize = standardize
        self.split = split
        self.pad_to_max_length = bool(pad_to_max_length)
        # The model sees ids into ``vocabulary``; the WordPiece model is
        # built without the padding token (id 0 there is [UNK], 1 here).
        self._wordpiece = tensorflow_text.FastWordpieceTokenizer(
            vocab=vocabulary[1:],
            suffix_indicator=SUFFIX_INDICATOR,
            max_bytes_per_word=MAX_BYTES_PER_WORD,
            token_out_type=tf.int64,
            unknown_token=OOV_TOKEN,
            no_pretokenization=True,
        )
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
        """A preprocessor whose WordPiece vocabulary is learned on ``texts``.

        Args:
            texts: training texts.
            max_length: pieces kept per text. None: the longest training
                text in pieces (or the ``length_percentile`` of the lengths),
                capped at ``length_cap``.
            max_tokens: vocabulary size, padding and ``[UNK]`` included
                (default ``DEFAULT_MAX_TOKENS``).
            min_count: the lowest training frequency of a piece longer than
                one character.
            standardize, split: as for the layer.
            length_cap, length_percentile, keep_longest_up_to: as for
                ``TextPreprocessor``.
            **kwargs: other constructor arguments.
        """
        texts = cls._check_texts(texts)
        counts, _ = tokenizer_lib.count_tokens(texts, standardize, split)
        vocabulary = learn_vocabulary(
            counts, DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens, min_count)
        options = dict(standardize=standardize, split=split, **kwargs)
        if max_length is None:
            lengths = cls(vocabulary, **options).piece_counts(texts)
            max_length = cls.automatic_length(lengths, None, length_percentile, length_cap,
                                              keep_longest_up_to)
        return cls(vocabulary, max_length=max_length, **options)

    # --- the graph --------------------------------------------------------

    def _pieces(self, inputs, max_words=None):
        """Ragged int64 ids (batch, None) of every piece (of the first
        ``max_words`` words)."""
        inputs = tf.convert_to_tensor(inputs, dtype=tf.string)
        if inputs.shape.rank == 0:
            inputs = tf.reshape(inputs, [1])
        elif inputs.shape.rank == 2:
            inputs = tf.reshape(inputs, [-1])
        if self.standardize is None:
            # The WordPiece op reads UTF-8: invalid bytes are replaced here too.
            inputs = tf.strings.unicode_transcode(inputs, "UTF-8", "UTF-8", errors="replace")
        words = tf.strings.split(self._standardize(inputs))
        if max_words is not None:
            words = words[:, :max_words]
        pieces = self._wordpiece.tokenize(words)  # (batch, words, pieces)
        return pieces.merge_dims(1, 2) + 1

    def _ragged(self, inputs):
        """Ragged int32 ids (batch, None), truncated to ``max_length``."""
        # Every word is at least one piece: later words cannot be reached.
        ids = self._pieces(inputs, max_words=self.max_length)
        return tf.cast(ids[:, : self.max_length], tf.int32)

    # --- Python-side helpers ------------------------------------------------

    def piece_counts(self, texts, batch_size=4096):
        """Pieces of each text before truncation (a list of ints)."""
        texts = list(texts)
        counts = []
        for i in range(0, len(texts), batch_size):
            batch = tf.constant(texts[i : i + batch_size], dtype=tf.string)
            counts.extend(self._pieces(batch).row_lengths().numpy().tolist())
        return counts

    def tokenize(self, texts):
        """The pieces of each text as Python strings (``[UNK]`` for a word
        that has no pieces), not truncated."""
        texts = list(texts)
        if not texts:
            return []
        ids = self._pieces(tf.constant(texts, dtype=tf.string))
        return [[self.vocabulary[i] for i in row] for row in ids.to_list()]
