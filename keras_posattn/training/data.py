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


def _log(message):
    print(message, flush=True)


@dataclasses.dataclass
class PreparedData:
    """Everything ``build_model`` and ``fit`` need from the data."""

    splits: object  # keras_posattn.datasets.splits.Splits
    preprocessor: object
    vectors: object = None  # keras_posattn.word_vectors.EmbeddingInit
    vectors_name: str = None

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


def _make_preprocessor(settings, options, splits, length_cap=400):
    preprocessor_cls = settings.family.preprocessor_cls
    extra = {}
    if options.max_sentences is not None:
        if preprocessor_cls.input_rank != 2:
            raise TrainingError(f"--max-sentences applies to hierarchical (document) models, "
                                f"not {settings.model_name!r}.")
        extra["max_sentences"] = options.max_sentences
    if preprocessor_cls.input_rank == 2:
        # Sentences are short: no cap of the flat texts' kind on their length.
        length_cap = None
    standardize = None if options.standardize in ("none", "", None) else options.standardize
    preprocessor = preprocessor_cls.from_texts(
        splits.train.texts, max_length=options.max_length,
        max_tokens=options.max_tokens or settings.recipe.max_tokens,
        standardize=standardize, length_cap=length_cap, **extra,
    )
    sizes = preprocessor.model_sizes()
    shape = (f"at most {sizes['max_sentences']} sentences of {sizes['max_length']} words "
             "per document" if "max_sentences" in sizes
             else f"at most {preprocessor.max_length} tokens per text")
    _log(f"Preprocessor: {preprocessor.vocabulary_size} words, {shape}.")
    return preprocessor


def _load_vectors(settings, options, preprocessor):
    """``(EmbeddingInit or None, the vectors' name)``: the options' vectors,
    else the recipe's when training on files, none on the embedded task."""
    embeddings = options.embeddings
    defaulted = embeddings is None and not settings.demo
    if defaulted:
        embeddings = settings.recipe.embeddings
    if str(embeddings).lower() in ("none", ""):
        return None, None
    from keras_posattn import word_vectors

    try:
        loaded = word_vectors.load_word_vectors(embeddings)
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
        f"Embeddings: {loaded.name}, {loaded.dim}d, covering {vectors.coverage:.1%} of the "
        "vocabulary (the rest initialised U(-0.05, 0.05))."
    )
    return vectors, loaded.name


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
    vectors, name = _load_vectors(settings, options, preprocessor)
    return PreparedData(splits, preprocessor, vectors, name)
