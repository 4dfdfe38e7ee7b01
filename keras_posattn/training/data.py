"""The data of a run, set up once for training, tuning and reproducing.

``prepare_data(settings, options)`` reads the splits (files, a benchmark set
by name, or the embedded default task), builds the family's preprocessor on
the training texts and loads pretrained word vectors for its vocabulary.
``PreparedData.batches`` turns a split into the ``tf.data`` batches every
``fit`` and ``evaluate`` reads, and ``PreparedData.samples`` gives the fixed
validation texts the attention images show.
"""

import dataclasses

import keras

from keras_posattn.training.settings import TrainingError
from keras_posattn.training.settings import run_vectors


def _log(message):
    print(message, flush=True)


@dataclasses.dataclass
class PreparedData:
    """Everything ``build_model`` and ``fit`` need from the data."""

    splits: object  # keras_posattn.datasets.splits.Splits
    preprocessor: object
    vectors: object = None  # keras_posattn.word_vectors.EmbeddingInit
    vectors_name: str = None
    #: How the vectors were made (in-domain vectors: ``domain_vectors.metadata``),
    #: for result.json, reproduce's records and the export's description.
    vectors_info: dict = None

    @property
    def label_names(self):
        return self.splits.label_names

    def batches(self, split, batch_size, buckets=True, seed=None):
        """The batches of ``split`` (``"train"``, ``"dev"`` or ``"test"``):
        token ids and labels, bucketed by length unless ``buckets`` is False;
        with ``seed`` (the training split) shuffled, seeded."""
        part = getattr(self.splits, split)
        return self.preprocessor.dataset(part.texts, part.labels, int(batch_size),
                                         shuffle_seed=seed, buckets=buckets)

    def samples(self, count=3):
        """``(token_ids, tokens)`` of the first ``count`` validation texts: the
        examples the attention images draw."""
        pre = self.preprocessor
        ids = keras.ops.convert_to_numpy(pre(self.splits.dev.texts[:count]))
        return ids, [pre.display_tokens(row) for row in ids]


def _load_splits(settings, options):
    from keras_posattn.datasets import splits as splits_lib

    if options.dataset is not None:
        from keras_posattn.datasets import catalog

        if any(p is not None for p in (options.train_path, options.test_path, options.dev_path)):
            raise TrainingError("--dataset and --train/--test/--dev are alternatives; pass one.")
        try:
            return catalog.load_dataset(options.dataset, options.data_dir, fold=options.fold,
                                        seed=options.seed, phrases=options.phrases)
        except catalog.DatasetError as e:
            raise TrainingError(str(e)) from None
    if options.fold is not None or options.phrases:
        raise TrainingError("--fold and --phrases apply to --dataset.")
    if options.train_path is None:
        if options.test_path is not None or options.dev_path is not None:
            raise TrainingError("--test/--dev need --train as well.")
        return splits_lib.embedded_task(
            seed=options.seed, size=options.demo_size,
            documents=settings.family.preprocessor_cls.input_rank == 2)
    return splits_lib.load_files(options.train_path, options.test_path, options.dev_path,
                                 seed=options.seed)


#: Whole documents: an automatic length keeps the longest training text when
#: it has at most this many tokens, else the 99th percentile of the training
#: lengths (documents), and a document keeps the 99th percentile of sentences
#: (at most ``SENTENCES_CAP``) of the 99th percentile of words.
KEEP_LONGEST_UP_TO = 400
LENGTH_PERCENTILE = 99
SENTENCES_CAP = 128
#: Documents: a sentence longer than this many words (or ``--max-length``)
#: is read as pieces of at most that many, not truncated. Text without
#: sentence punctuation (R8: one "sentence" of up to 964 words) stays
#: hierarchical; in IMDB 2% of sentences are longer (99th percentile 60).
PIECE_LENGTH = 50


def _preprocessor_class(settings, options):
    cls = settings.family.preprocessor_cls
    if options.tokenizer not in (None, "words"):
        from keras_posattn.preprocessing import WordPiecePreprocessor

        if cls.input_rank != 1:
            raise TrainingError(f"--tokenizer {options.tokenizer} applies to flat models; "
                                f"{settings.model_name!r} reads documents as sentences of words.")
        if str(options.embeddings).lower() not in ("none", ""):
            raise TrainingError("WordPiece pieces have no pretrained word vectors: pass "
                                "--embeddings none with --tokenizer wordpiece.")
        cls = WordPiecePreprocessor
    return cls


def vocabulary_cap(options, settings):
    """The run's ``max_tokens``: ``options.max_tokens`` where given, else the
    recipe's; None (every training word) where that is None or 0."""
    cap = settings.recipe.max_tokens if options.max_tokens is None else options.max_tokens
    return cap or None


def _make_preprocessor(settings, options, splits):
    preprocessor_cls = _preprocessor_class(settings, options)
    extra = {}
    if options.max_sentences is not None:
        if preprocessor_cls.input_rank != 2:
            raise TrainingError(f"--max-sentences applies to hierarchical (document) models, "
                                f"not {settings.model_name!r}.")
        extra["max_sentences"] = options.max_sentences
    if preprocessor_cls.input_rank == 2:
        extra.update(sentences_percentile=LENGTH_PERCENTILE, sentences_cap=SENTENCES_CAP,
                     piece_length=options.max_length or PIECE_LENGTH)
    else:
        extra["keep_longest_up_to"] = KEEP_LONGEST_UP_TO
    standardize = None if options.standardize in ("none", "", None) else options.standardize
    preprocessor = preprocessor_cls.from_texts(
        splits.train.texts, max_length=options.max_length,
        max_tokens=vocabulary_cap(options, settings),
        standardize=standardize, length_percentile=LENGTH_PERCENTILE, **extra,
    )
    sizes = preprocessor.model_sizes()
    shape = (f"at most {sizes['max_sentences']} sentences of {sizes['max_length']} words "
             f"per document (longer sentences read as pieces of {preprocessor.piece_length})"
             if "max_sentences" in sizes
             else f"at most {preprocessor.max_length} tokens per text")
    _log(f"Preprocessor: {preprocessor.vocabulary_size} words, {shape}.")
    return preprocessor


def _load_vectors(settings, options, preprocessor, splits):
    """``(EmbeddingInit or None, the vectors' name, how they were made)``:
    the options' vectors, else the recipe's when training on files, none on
    the embedded task. In-domain vectors (``domain...``) are trained here on
    the training split's tokens (and ``options.unlabeled``'s), as the
    preprocessor tokenises them."""
    from keras_posattn import domain_vectors
    from keras_posattn import word_vectors

    embeddings = run_vectors(options, settings)
    defaulted = options.embeddings is None and not settings.demo
    try:
        spec = domain_vectors.parse_spec(embeddings)
    except ValueError as e:
        raise TrainingError(str(e)) from None
    if options.unlabeled is not None and spec is None:
        raise TrainingError("--unlabeled texts train in-domain vectors: pass --embeddings "
                            "domain (or domain-<method>-<dim>d[+glove-6b-50d]) with it.")
    if str(embeddings).lower() in ("none", ""):
        return None, None, None
    info = None
    try:
        if spec is not None:
            unlabeled = None
            if options.unlabeled is not None:
                unlabeled = preprocessor.tokenize(domain_vectors.read_unlabeled(options.unlabeled))
            loaded = domain_vectors.train_domain_vectors(
                preprocessor.tokenize(splits.train.texts), spec, seed=options.seed,
                unlabeled_token_lists=unlabeled, progress=_log)
            info = domain_vectors.metadata(loaded)
            info.pop("cache_file", None)  # a local path
            name = spec.name
        else:
            loaded = word_vectors.load_word_vectors(embeddings)
            name = loaded.name
    except ImportError as e:
        if not defaulted:
            raise
        raise TrainingError(
            f"{e} (the recipe's default vectors; pass --embeddings none to train "
            "without pretrained vectors)"
        ) from None
    vectors = word_vectors.build_embedding_matrix(preprocessor.vocabulary, loaded,
                                                  seed=options.seed)
    _log(
        f"Embeddings: {name}, {loaded.dim}d, covering {vectors.coverage:.1%} of the "
        "vocabulary (the rest initialised U(-0.05, 0.05))."
    )
    return vectors, name, info


def prepare_data(settings, options):
    """Splits, the family's preprocessor and the word vectors for a run.

    Args:
        settings: from ``settings.settings_for`` / ``resolve_settings``.
        options: the run's ``RunOptions`` (its data fields: files or a
            dataset by name, or neither for the embedded default task; the
            preprocessor's ``max_length`` - default the longest training
            text, capped at 400 - ``max_tokens``, ``max_sentences`` and
            ``standardize``; ``embeddings`` - default the recipe's vectors
            on files, none on the embedded task; ``seed`` for the held-out
            splits and the OOV vectors).
    """
    splits = _load_splits(settings, options)
    for note in splits.notes:
        _log(note)
    _log(
        f"Data: {splits.description}\n"
        f"  train {len(splits.train)}, validation {len(splits.dev)}, test {len(splits.test)}; "
        f"{len(splits.label_names)} classes: {', '.join(splits.label_names)}"
    )
    preprocessor = _make_preprocessor(settings, options, splits)
    vectors, name, info = _load_vectors(settings, options, preprocessor, splits)
    return PreparedData(splits, preprocessor, vectors, name, info)
