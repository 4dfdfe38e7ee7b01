"""The one training entry point every zoo model goes through, in stages.

``train(model_name, ...)`` runs four stages, each a public function that the
tuner and the reproduction command call instead of copying them:

1. ``resolve_settings`` + ``prepare_data``: the preset's config and recipe
   (with the demo settings on the embedded task), the splits (files or the
   embedded default task), the family's preprocessor built on the training
   texts, and pretrained word vectors for its vocabulary;
2. ``build_model``: the zoo model at the data's sizes (classes, vocabulary,
   max length, vector width), vectors loaded, compiled with the recipe;
3. ``fit``: TensorBoard logs, attention heat-maps, a checkpoint every epoch,
   and resumption of an interrupted run;
4. ``finish``: test accuracy beside a bag-of-words baseline, the
   ``classifier.keras`` (strings in, logits out), the SavedModel export and
   ``result.json``.

Every stage uses only the model contract (``keras_posattn.models.base``):
nothing here knows a family's name or its arguments.
"""

import dataclasses
import json
import shutil
import sys
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from keras_posattn import zoo
from keras_posattn.training.recipe import Recipe


class TrainingError(RuntimeError):
    """A problem with the user's run settings (printed without a traceback)."""


@dataclasses.dataclass
class Settings:
    """A preset resolved for one run."""

    model_name: str
    preset: dict
    config: dict
    recipe: Recipe
    demo: bool
    recipe_name: str = "paper"

    @property
    def family(self):
        return zoo.families()[self.preset["family"]]


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


@dataclasses.dataclass
class TrainResult:
    model_name: str
    test_accuracy: float
    baseline_accuracy: float
    epochs_run: int
    output_dir: Path
    export_dir: Path = None
    sample_text: str = None
    sample_prediction: dict = None
    history: dict = None


def _log(message):
    print(message, flush=True)


def _parse_value(text):
    """Parse a ``--set key=value`` value: JSON if it parses, else a string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_overrides(pairs):
    """Turn ``["dropout=0.1", "branch_masks=[\\"bw\\"]"]`` into a dict."""
    result = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise TrainingError(f"--set expects key=value, got {pair!r}.")
        key, value = pair.split("=", 1)
        result[key.strip()] = _parse_value(value.strip())
    return result


# --- stage 1: settings and data ---------------------------------------------


RECIPES = ("paper", "50d")


def resolve_settings(model_name, demo, overrides=None, recipe_name="paper", **recipe_changes):
    """The preset's config and recipe for a run, with ``overrides`` (model
    arguments) and recipe fields applied.

    ``recipe_name``: ``"paper"`` (the preset's ``config`` and ``recipe``: the
    paper's protocol) or ``"50d"`` (the preset's ``glove50d`` table on top: the
    settings tuned on dev data for the 50d GloVe vectors available here). On the
    embedded task (``demo``) the preset's ``demo`` table applies instead.
    """
    if recipe_name not in RECIPES:
        raise TrainingError(f"Unknown recipe {recipe_name!r}; choose one of {', '.join(RECIPES)}.")
    preset = zoo.get_preset(model_name)
    config = dict(preset.get("config", {}))
    recipe = dict(preset.get("recipe", {}))
    extra = {}
    if demo:
        extra = preset.get("demo", {})
    elif recipe_name == "50d":
        if "glove50d" not in preset:
            raise TrainingError(f"Preset {model_name!r} has no 50d recipe (a [glove50d] table); "
                                "use --recipe paper.")
        extra = preset["glove50d"]
    config.update(extra.get("config", {}))
    recipe.update(extra.get("recipe", {}))
    config.update({k: v for k, v in (overrides or {}).items() if v is not None})
    try:
        recipe = Recipe.from_dict(recipe, where=f"preset {model_name!r}").replace(**recipe_changes)
    except ValueError as e:
        raise TrainingError(str(e)) from None
    return Settings(model_name, preset, config, recipe, demo, recipe_name if not demo else "demo")


def prepare_data(settings, train_path=None, test_path=None, dev_path=None, embeddings=None,
                 max_length=None, max_tokens=None, standardize="lower_and_strip_punctuation",
                 seed=1234, demo_size=None, length_cap=400, dataset=None, data_dir=None,
                 fold=None, phrases=False, max_sentences=None):
    """Splits, the family's preprocessor and the word vectors for a run.

    Args:
        settings: from ``resolve_settings``.
        train_path, test_path, dev_path: labelled files; without
            ``train_path`` (and without ``dataset``) the embedded default
            task is generated.
        dataset, data_dir, fold, phrases: a benchmark set by name instead
            of files (``keras_posattn.datasets.load_dataset``).
        max_sentences: sentences kept per document (hierarchical models;
            default: the 95th percentile of the training documents', at
            most 64).
        embeddings: ``"glove-6b-50d"``, a GloVe/word2vec text file, or
            ``"none"``. Default: the recipe's vectors when training on files,
            none on the embedded task.
        max_length: tokens kept per text (default: the longest training text,
            capped at ``length_cap``).
        max_tokens: vocabulary size cap.
        standardize: the preprocessor's text standardisation.
        seed: fixes the held-out splits and the OOV vectors.
        demo_size: training examples of the embedded task.
    """
    from keras_posattn.datasets import splits as splits_lib

    if dataset is not None:
        from keras_posattn.datasets import catalog

        if train_path is not None or test_path is not None or dev_path is not None:
            raise TrainingError("--dataset and --train/--test/--dev are alternatives; pass one.")
        try:
            splits = catalog.load_dataset(dataset, data_dir, fold=fold, seed=seed,
                                          phrases=phrases)
        except catalog.DatasetError as e:
            raise TrainingError(str(e)) from None
    elif fold is not None or phrases:
        raise TrainingError("--fold and --phrases apply to --dataset.")
    elif train_path is None:
        if test_path is not None or dev_path is not None:
            raise TrainingError("--test/--dev need --train as well.")
        splits = splits_lib.embedded_task(
            seed=seed, size=demo_size,
            documents=settings.family.preprocessor_cls.input_rank == 2)
    else:
        splits = splits_lib.load_files(train_path, test_path, dev_path, seed=seed)
    for note in splits.notes:
        _log(note)
    _log(
        f"Data: {splits.description}\n"
        f"  train {len(splits.train)}, validation {len(splits.dev)}, test {len(splits.test)}; "
        f"{len(splits.label_names)} classes: {', '.join(splits.label_names)}"
    )
    if standardize in ("none", ""):
        standardize = None
    preprocessor_cls = settings.family.preprocessor_cls
    options = {}
    if max_sentences is not None:
        if preprocessor_cls.input_rank != 2:
            raise TrainingError(f"--max-sentences applies to hierarchical (document) models, "
                                f"not {settings.model_name!r}.")
        options["max_sentences"] = max_sentences
    if preprocessor_cls.input_rank == 2:
        # Sentences are short: no cap of the flat texts' kind on their length.
        length_cap = None
    preprocessor = preprocessor_cls.from_texts(
        splits.train.texts, max_length=max_length, max_tokens=max_tokens,
        standardize=standardize, length_cap=length_cap, **options,
    )
    sizes = preprocessor.model_sizes()
    shape = (f"at most {sizes['max_sentences']} sentences of {sizes['max_length']} words "
             "per document" if "max_sentences" in sizes
             else f"at most {preprocessor.max_length} tokens per text")
    _log(f"Preprocessor: {preprocessor.vocabulary_size} words, {shape}.")

    defaulted = embeddings is None and not settings.demo
    if defaulted:
        embeddings = settings.recipe.embeddings
    if str(embeddings).lower() in ("none", ""):
        embeddings = None
    vectors = None
    if embeddings:
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
        vectors = word_vectors.build_embedding_matrix(preprocessor.vocabulary, loaded, seed=seed)
        _log(
            f"Embeddings: {loaded.name}, {loaded.dim}d, covering {vectors.coverage:.1%} of the "
            "vocabulary (the rest initialised U(-0.05, 0.05))."
        )
        embeddings = loaded.name
    return PreparedData(splits, preprocessor, vectors, embeddings)


# --- stage 2: the model -------------------------------------------------------


def build_model(settings, data, overrides=None, compile=True):
    """The zoo model at the data's sizes, pretrained vectors loaded, compiled.

    The contract arguments come from the data: ``num_classes`` (its classes),
    ``vocabulary_size`` and ``max_length`` (and ``max_sentences`` for
    documents: its preprocessor's ``model_sizes()``) and, with
    pretrained vectors, ``embedding_dim``. ``overrides`` (e.g. a tuner's
    hyperparameters) replace the settings' config.
    """
    config = dict(settings.config)
    config.update({k: v for k, v in (overrides or {}).items() if v is not None})
    config.update(
        num_classes=len(data.label_names),
        vocabulary_size=data.preprocessor.vocabulary_size,
        **data.preprocessor.model_sizes(),
    )
    if data.vectors is not None:
        config["embedding_dim"] = int(data.vectors.matrix.shape[1])
    elif config.get("trainable_embeddings") == "none":
        # Frozen random vectors would never learn anything.
        config["trainable_embeddings"] = "all"
    try:
        model = zoo.build(settings.model_name, **config)
    except TypeError as e:
        raise TrainingError(str(e)) from None
    if data.vectors is not None:
        model.embedding.set_pretrained(data.vectors.matrix, data.vectors.pretrained)
    if compile:
        model.compile(
            optimizer=settings.recipe.make_optimizer(),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
            jit_compile=settings.recipe.jit_compile,
        )
    return model


# --- stage 3: fit ---------------------------------------------------------------


class ClassifierCheckpoint(keras.callbacks.Callback):
    """Save the model with its preprocessor and class names (a
    ``TextClassifier``: raw strings in) after every epoch, so an unfinished
    run can be exported (``keras-posattn export <run folder>``)."""

    def __init__(self, preprocessor, label_names, path):
        super().__init__()
        self.preprocessor = preprocessor
        self.label_names = list(label_names)
        self.path = Path(path)

    def on_epoch_end(self, epoch, logs=None):
        from keras_posattn.models import TextClassifier

        TextClassifier(self.preprocessor, self.model, label_names=self.label_names,
                       name=f"{self.model.name}_text").save(self.path)


def prepare_output_dir(output_dir, resume=False, overwrite=False):
    """Create the run folder; refuse to clobber an interrupted run."""
    output_dir = Path(output_dir)
    backup_dir = output_dir / "backup"
    if backup_dir.exists() and not (resume or overwrite):
        raise TrainingError(
            f"{output_dir} holds an interrupted run (checkpoint in {backup_dir}). "
            "Pass --resume to continue it or --overwrite to start over."
        )
    if overwrite and output_dir.exists():
        shutil.rmtree(output_dir)
    if resume and not backup_dir.exists():
        _log(f"--resume: no interrupted run in {output_dir}; starting a new one.")
    output_dir.mkdir(parents=True, exist_ok=True)
    return output_dir


def fit(model, data, recipe, output_dir, seed=1234, callbacks=None, verbose=None, resume=False,
        num_workers=1, projector=False):
    """Train with TensorBoard logs, attention images and per-epoch checkpoints.

    The vocabulary and class names are written to ``output_dir``; on
    ``resume`` the vocabulary must match the interrupted run's. With
    ``num_workers > 1`` (a multi-worker strategy) every worker runs the same
    number of steps over its shard (``distribute.shard_steps``). With
    ``projector``, the trained word embedding is written for TensorBoard's
    projector (``logs/projector``).
    """
    from keras_posattn.training.attention_images import AttentionImages
    from keras_posattn.training.tensorboard import ModelGraph

    output_dir = Path(output_dir)
    pre, splits = data.preprocessor, data.splits
    vocab_file = output_dir / "vocabulary.txt"
    if resume and vocab_file.exists():
        if vocab_file.read_text(encoding="utf-8").split("\n") != list(pre.vocabulary):
            raise TrainingError(
                f"--resume: the vocabulary built from the training data differs from "
                f"the one saved in {vocab_file}; was the data changed?"
            )
    vocab_file.write_text("\n".join(pre.vocabulary), encoding="utf-8")
    (output_dir / "labels.txt").write_text("\n".join(splits.label_names) + "\n", encoding="utf-8")
    log_dir = output_dir / "logs"
    _log(f"TensorBoard: tensorboard --logdir {log_dir}")

    bs = int(recipe.batch_size)
    train_ds = pre.dataset(splits.train.texts, splits.train.labels, bs, shuffle_seed=seed,
                           buckets=recipe.buckets)
    dev_ds = pre.dataset(splits.dev.texts, splits.dev.labels, bs, buckets=recipe.buckets)

    (output_dir / "checkpoints").mkdir(exist_ok=True)
    sample_texts = splits.dev.texts[:3]
    sample_inputs = keras.ops.convert_to_numpy(pre(sample_texts))
    all_callbacks = [
        keras.callbacks.BackupAndRestore(str(output_dir / "backup"), save_freq="epoch"),
        keras.callbacks.TensorBoard(log_dir=str(log_dir)),
        ClassifierCheckpoint(pre, splits.label_names, output_dir / "checkpoints" / "last.keras"),
        AttentionImages(str(log_dir), model.attention_maps, sample_inputs,
                        [pre.display_tokens(row) for row in sample_inputs]),
        ModelGraph(log_dir, sample_inputs),
        *[c for c in (recipe.schedule_callback(), recipe.selection_callback()) if c],
        *(callbacks or []),
    ]
    if verbose is None:
        verbose = 1 if sys.stdout.isatty() else 2
    steps = {}
    if num_workers > 1:
        from keras_posattn.training.distribute import shard_steps

        train_ds, steps["steps_per_epoch"] = shard_steps(train_ds, num_workers)
        dev_ds, steps["validation_steps"] = shard_steps(dev_ds, num_workers)
    history = model.fit(
        train_ds,
        validation_data=dev_ds,
        epochs=int(recipe.epochs),
        callbacks=all_callbacks,
        verbose=verbose,
        shuffle=False,  # the dataset shuffles itself, seeded
        **steps,
    )
    if projector:
        from keras_posattn.training.tensorboard import write_projector

        write_projector(log_dir / "projector", model, pre.vocabulary)
    return history


# --- stage 4: finish ------------------------------------------------------------


def finish(settings, model, data, history, output_dir, export=True, export_dir="saved_models",
           sample_text=None, seed=1234, num_workers=1):
    """Evaluate beside the baseline, save ``classifier.keras``, export, reload."""
    from keras_posattn.baselines import bag_of_words_baseline
    from keras_posattn.models import TextClassifier

    output_dir = Path(output_dir)
    splits, pre = data.splits, data.preprocessor
    model = float32_copy(model)
    test_ds = pre.dataset(splits.test.texts, splits.test.labels, int(settings.recipe.batch_size),
                          buckets=settings.recipe.buckets)
    steps = {}
    if num_workers > 1:
        from keras_posattn.training.distribute import shard_steps

        test_ds, steps["steps"] = shard_steps(test_ds, num_workers)
    _, test_accuracy = model.evaluate(test_ds, verbose=0, **steps)
    baseline = bag_of_words_baseline(
        splits.train.texts, splits.train.labels, splits.test.texts, splits.test.labels,
        seed=seed, tokenizer=pre.tokenize,
    )
    name = settings.model_name
    _log(
        f"\nTest accuracy: {name} {test_accuracy:.4f} | bag-of-words baseline "
        f"{baseline:.4f} | chance {1.0 / len(splits.label_names):.4f}  "
        f"({len(splits.test)} test texts)"
    )

    classifier = TextClassifier(pre, model, label_names=splits.label_names, name=f"{name}_text")
    classifier.save(output_dir / "classifier.keras")
    _log(f"Saved {output_dir / 'classifier.keras'} (strings in, logits out).")

    result = TrainResult(
        model_name=name,
        test_accuracy=float(test_accuracy),
        baseline_accuracy=float(baseline),
        epochs_run=len(history.history.get("loss", [])),
        output_dir=output_dir,
        history={k: [float(x) for x in v] for k, v in history.history.items()},
    )
    sample_text = sample_text or splits.sample_text
    if export:
        from keras_posattn.export import export_saved_model, predict_exported

        path = export_saved_model(classifier, name=name, base_dir=export_dir)
        result.export_dir = path
        _log(f"Exported SavedModel: {path}")
        if sample_text:
            prediction = predict_exported(path, [sample_text])
            label = str(prediction["label"][0])
            prob = float(prediction["probabilities"][0].max())
            result.sample_text = sample_text
            result.sample_prediction = {"label": label, "probability": prob}
            _log(f"Reloaded export predicts {label!r} (p={prob:.3f}) for: {sample_text!r}")
    return result


def float32_copy(model):
    """``model`` itself if it computes in float32, else a float32 copy with its
    weights (compiled for evaluation): what ``classifier.keras`` and the
    export get after mixed-precision training, so that serving never depends
    on the training machine's bfloat16 support."""
    if model.compute_dtype == "float32":
        return model
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("float32")
    try:
        copy = type(model).from_config(model.get_config())
    finally:
        keras.mixed_precision.set_global_policy(previous)
    copy.set_weights(model.get_weights())
    copy.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                 metrics=["accuracy"])
    return copy


def train(model_name, dtype_policy=None, **kwargs):
    """Train a zoo model end to end; see the module docstring.

    Args:
        model_name: a name from ``keras_posattn.zoo.list_models()``.
        train_path, test_path, dev_path: labelled text files (TSV, CSV,
            JSONL). Without ``train_path`` or ``dataset`` the embedded default
            task is used, with the preset's smaller ``demo`` settings.
        dataset: a benchmark set by name (``keras_posattn.datasets.
            known_datasets()``), read from ``data_dir`` (default: the
            ``KERAS_POSATTN_DATA`` variable); ``fold`` picks the test fold of
            a cross-validated set, ``phrases`` trains on SST's phrases.
        embeddings: ``"glove-6b-50d"``, a path to a GloVe/word2vec text file,
            or ``"none"``. Default: the recipe's vectors (``glove-6b-50d``,
            offline) when training on files, none on the embedded task.
        epochs, batch_size, learning_rate, optimizer: override the recipe.
        max_length: tokens kept per text (default: the longest training text,
            capped at 400).
        max_tokens: vocabulary size cap.
        standardize: the text standardisation: ``"lower_and_strip_punctuation"``
            (default), ``"lower"``, ``"strip_punctuation"`` or ``None``.
        overrides: dict of model constructor arguments.
        output_dir: run folder (default ``runs/<model_name>``).
        export_dir: SavedModel base folder (``<export_dir>/<model>/<version>``).
        export: whether to export a SavedModel at the end.
        resume: continue an interrupted run in ``output_dir``.
        overwrite: discard an interrupted run in ``output_dir`` and start over.
        seed: fixes data order, splits and initialisation.
        demo_size: number of training examples of the embedded task.
        sample_text: sentence whose prediction is printed after export.
        dtype_policy: e.g. ``"mixed_bfloat16"`` or ``"float32"``; default: the
            recipe's (``Recipe.mixed_bfloat16``). Restored afterwards; the
            saved classifier and the export are float32 either way.
        verbose: Keras fit verbosity (default: progress bar on a terminal,
            one line per epoch otherwise).
        callbacks: extra Keras callbacks for ``fit``.
        projector: write the trained word embedding for TensorBoard's projector.
        recipe: ``"paper"`` (the paper's protocol) or ``"50d"`` (the preset's
            settings tuned for 50d GloVe); default: ``"50d"`` when training on
            files with the 50d vectors and the preset has one, else ``"paper"``.
        strategy: ``"mirrored"`` (this machine's devices) or ``"multi_worker"``
            (the cluster in ``TF_CONFIG``); see ``keras_posattn.training.distribute``.
    """
    previous = keras.mixed_precision.global_policy()
    try:
        return _train(model_name, dtype_policy=dtype_policy, **kwargs)
    finally:
        # Leave the process as we found it (tests and notebooks train again).
        keras.mixed_precision.set_global_policy(previous)


def _train(model_name, train_path=None, test_path=None, dev_path=None, embeddings=None,
           epochs=None, batch_size=None, learning_rate=None, optimizer=None, max_length=None,
           max_tokens=None, standardize="lower_and_strip_punctuation", overrides=None,
           output_dir=None, export_dir="saved_models", export=True, resume=False,
           overwrite=False, seed=1234, demo_size=None, sample_text=None, verbose=None,
           callbacks=None, strategy=None, projector=False, recipe=None, dataset=None,
           data_dir=None, fold=None, phrases=False, max_sentences=None, dtype_policy=None):
    from keras_posattn.training import distribute

    started = time.time()
    # A tf.distribute strategy must exist before TensorFlow runs an operation.
    strategy = distribute.make_strategy(strategy)
    num_workers = distribute.task()[2] if isinstance(
        strategy, tf.distribute.MultiWorkerMirroredStrategy) else 1
    demo = train_path is None and dataset is None
    if recipe is None:
        # On files with the default vectors (50d GloVe), a preset's tuned 50d
        # recipe is the default; the paper's is one --recipe paper away.
        vectors = embeddings or zoo.get_preset(model_name).get("recipe", {}).get("embeddings")
        has_50d = "glove50d" in zoo.get_preset(model_name)
        recipe = "50d" if (not demo and has_50d and vectors == "glove-6b-50d") else "paper"
    settings = resolve_settings(
        model_name, demo=demo, overrides=overrides, recipe_name=recipe, epochs=epochs,
        batch_size=batch_size, learning_rate=learning_rate, optimizer=optimizer,
    )
    if dtype_policy:
        policy, why = dtype_policy, "--dtype-policy"
    else:
        policy, why = settings.recipe.dtype_policy()
    if policy:
        keras.mixed_precision.set_global_policy(policy)
        _log(f"Precision: {policy} ({why}).")
    output_dir = Path(output_dir or Path("runs") / model_name)
    if num_workers > 1:
        # One batch shape for every worker, and no XLA across the collectives.
        settings.recipe = settings.recipe.replace(buckets=False, jit_compile=False)
        if not distribute.is_chief():
            output_dir = output_dir.with_name(f"{output_dir.name}.worker{distribute.task()[1]}")
            export = False
    output_dir = prepare_output_dir(output_dir, resume, overwrite)
    keras.utils.set_random_seed(seed)

    data = prepare_data(
        settings, train_path, test_path, dev_path, embeddings=embeddings,
        max_length=max_length, max_tokens=max_tokens, standardize=standardize,
        seed=seed, demo_size=demo_size, dataset=dataset, data_dir=data_dir, fold=fold,
        phrases=phrases, max_sentences=max_sentences,
    )
    if strategy is not None:
        with strategy.scope():
            model = distribute.adapt_model(build_model(settings, data))
        _log(f"Strategy: {type(strategy).__name__}, {strategy.num_replicas_in_sync} replicas, "
             f"{num_workers} worker(s).")
    else:
        model = build_model(settings, data)
    recipe = settings.recipe
    _log(
        f"Model: {model_name} ({settings.preset.get('description', '')})\n"
        f"  {model.count_params():,} parameters; {settings.recipe_name} recipe: "
        + ", ".join(f"{k}={v}" for k, v in recipe.as_dict().items()
                    if v is not None and k != "embeddings")
    )
    history = fit(model, data, recipe, output_dir, seed=seed, callbacks=callbacks,
                  verbose=verbose, resume=resume, num_workers=num_workers, projector=projector)
    result = finish(settings, model, data, history, output_dir, export=export,
                    export_dir=export_dir, sample_text=sample_text, seed=seed,
                    num_workers=num_workers)

    summary = dataclasses.asdict(result)
    summary.update(
        output_dir=str(output_dir),
        export_dir=str(result.export_dir) if result.export_dir else None,
        config=model.get_config(),
        recipe=recipe.as_dict(),
        recipe_name=settings.recipe_name,
        dtype_policy=model.dtype_policy.name,
        data=data.splits.description,
        dataset=data.splits.name,
        fold=data.splits.fold,
        num_folds=data.splits.num_folds,
        phrases=bool(phrases),
        embeddings=data.vectors_name,
        seconds=round(time.time() - started, 1),
        versions={"tensorflow": tf.__version__, "keras": keras.__version__,
                  "numpy": np.__version__},
    )
    (output_dir / "result.json").write_text(json.dumps(summary, indent=2, default=str))
    return result
