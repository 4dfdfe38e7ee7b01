"""The one training entry point every zoo model goes through.

``train(model_name, ...)`` reads labelled text (or generates the embedded
default task), builds a vectorizer and the zoo model, trains with the
preset's recipe while writing TensorBoard logs, attention heat-maps and a
checkpoint every epoch, evaluates, compares with a bag-of-words baseline,
saves the model with its vectorizer, and exports a SavedModel for TF
Serving. The ``keras-posattn train`` command is a thin wrapper over it.
"""

import dataclasses
import json
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np

# Keep TensorFlow's C++ start-up chatter out of the user's terminal.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_posattn import zoo  # noqa: E402

OPTIMIZERS = {
    "adadelta": keras.optimizers.Adadelta,
    "adam": keras.optimizers.Adam,
    "adamw": keras.optimizers.AdamW,
    "sgd": keras.optimizers.SGD,
    "rmsprop": keras.optimizers.RMSprop,
}


class TrainingError(RuntimeError):
    """A problem with the user's run settings (printed without a traceback)."""


@dataclasses.dataclass
class Split:
    texts: list
    labels: np.ndarray


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


def load_data(train_path=None, test_path=None, dev_path=None, seed=1234,
              demo_size=None, text_column="text", label_column="label"):
    """Return ``(train, dev, test, label_names, description, sample_text)``.

    Without ``train_path`` the embedded default task is generated. Without a
    dev file, 10% of the training data (seeded) is held out for validation;
    without a test file, another 10%.
    """
    from keras_posattn import text as text_lib

    rng = np.random.default_rng(seed)
    if train_path is None:
        if test_path is not None or dev_path is not None:
            raise TrainingError("--test/--dev need --train as well.")
        from keras_posattn.data import synthetic

        kwargs = {"seed": seed}
        if demo_size:
            kwargs.update(num_train=int(demo_size), num_test=max(200, int(demo_size) // 4))
        task = synthetic.generate_position_task(**kwargs)
        train = Split(list(task.train_texts), np.asarray(task.train_labels, "int32"))
        test = Split(list(task.test_texts), np.asarray(task.test_labels, "int32"))
        names = list(task.label_names)
        description = "embedded default: " + task.description.splitlines()[0]
        sample = synthetic.DEFAULT_SAMPLE_SENTENCE
        dev = None
    else:
        read = lambda p: text_lib.read_labelled(  # noqa: E731
            p, text_column=text_column, label_column=label_column, encoding="auto"
        )
        raw_train = read(train_path)
        names = text_lib.find_label_names(train_path)
        ids, names = text_lib.encode_labels(raw_train.labels, names)
        train = Split(list(raw_train.texts), ids)
        test = dev = None
        if test_path is not None:
            raw = read(test_path)
            test = Split(list(raw.texts), text_lib.encode_labels(raw.labels, names)[0])
        if dev_path is not None:
            raw = read(dev_path)
            dev = Split(list(raw.texts), text_lib.encode_labels(raw.labels, names)[0])
        description = str(train_path)
        sample = None
        if test is None:
            train, test = _hold_out(train, rng)
            _log("No --test file: holding out 10% of the training data as test.")
        sample = test.texts[0]
    if dev is None:
        train, dev = _hold_out(train, rng)
    return train, dev, test, names, description, sample


def _hold_out(split, rng, fraction=0.1):
    n = len(split.texts)
    order = rng.permutation(n)
    k = max(1, int(round(n * fraction)))
    held, kept = np.sort(order[:k]), np.sort(order[k:])
    pick = lambda idx: Split([split.texts[i] for i in idx], split.labels[idx])  # noqa: E731
    return pick(kept), pick(held)


def _vectorize(vectorizer, texts, batch_size=2048):
    parts = []
    for start in range(0, len(texts), batch_size):
        chunk = tf.constant(texts[start:start + batch_size], dtype=tf.string)
        parts.append(vectorizer(chunk).numpy())
    if not parts:
        return np.zeros((0, vectorizer.get_config()["output_sequence_length"]), "int32")
    return np.concatenate(parts).astype("int32")


def _dataset(ids, labels, batch_size, shuffle_seed=None):
    ds = tf.data.Dataset.from_tensor_slices((ids, labels))
    if shuffle_seed is not None:
        ds = ds.shuffle(len(labels), seed=shuffle_seed, reshuffle_each_iteration=True)
    return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)


def _make_optimizer(recipe):
    name = str(recipe.get("optimizer", "adam")).lower()
    if name not in OPTIMIZERS:
        raise TrainingError(f"Unknown optimizer {name!r}; known: {sorted(OPTIMIZERS)}.")
    kwargs = {"learning_rate": float(recipe.get("learning_rate", 1e-3))}
    if recipe.get("ema"):
        kwargs.update(use_ema=True, ema_momentum=float(recipe["ema"]))
    return OPTIMIZERS[name](**kwargs)


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


def train(model_name, dtype_policy=None, **kwargs):
    """Train a zoo model end to end; see the module docstring.

    Args:
        model_name: a name from ``keras_posattn.zoo.list_models()``.
        train_path, test_path, dev_path: labelled text files (TSV, CSV,
            JSONL). Without ``train_path`` the embedded default task is used,
            with the preset's smaller ``demo`` settings.
        embeddings: ``"glove-6b-50d"``, a path to a GloVe/word2vec text file,
            or ``"none"`` for randomly initialised embeddings. Default: the
            recipe's vectors (``glove-6b-50d``, the offline default) when
            training on files, none on the embedded default task.
        epochs, batch_size, learning_rate, optimizer: override the recipe.
        max_length: tokens kept per text (default: the longest training text,
            capped at 400).
        max_tokens: vocabulary size cap.
        standardize: the vectorizer's text standardisation:
            ``"lower_and_strip_punctuation"`` (default), ``"lower"``,
            ``"strip_punctuation"`` or ``None`` (keep case and punctuation).
        overrides: dict of model constructor arguments.
        output_dir: run folder (default ``runs/<model_name>``): TensorBoard
            logs, per-epoch checkpoints, the final ``.keras`` model.
        export_dir: SavedModel base folder (``<export_dir>/<model>/<version>``).
        export: whether to export a SavedModel at the end.
        resume: continue an interrupted run in ``output_dir``.
        overwrite: discard an interrupted run in ``output_dir`` and start over.
        seed: fixes data order, splits and initialisation.
        demo_size: number of training examples of the embedded task.
        sample_text: sentence whose prediction is printed after export.
        dtype_policy: e.g. ``"mixed_bfloat16"``.
        verbose: Keras fit verbosity (default: progress bar on a terminal,
            one line per epoch otherwise).
        callbacks: extra Keras callbacks for ``fit``.
    """
    previous = keras.mixed_precision.global_policy()
    if dtype_policy:
        keras.mixed_precision.set_global_policy(dtype_policy)
    try:
        return _train(model_name, **kwargs)
    finally:
        # Leave the process as we found it (tests and notebooks train again).
        keras.mixed_precision.set_global_policy(previous)


def _train(
    model_name,
    train_path=None,
    test_path=None,
    dev_path=None,
    embeddings=None,
    epochs=None,
    batch_size=None,
    learning_rate=None,
    optimizer=None,
    max_length=None,
    max_tokens=None,
    standardize="lower_and_strip_punctuation",
    overrides=None,
    output_dir=None,
    export_dir="saved_models",
    export=True,
    resume=False,
    overwrite=False,
    seed=1234,
    demo_size=None,
    sample_text=None,
    verbose=None,
    callbacks=None,
):
    """See ``train``."""
    from keras_posattn import text as text_lib
    from keras_posattn.data.baselines import bag_of_words_baseline

    started = time.time()
    preset = zoo.get_preset(model_name)
    demo = train_path is None
    config = dict(preset.get("config", {}))
    recipe = dict(preset.get("recipe", {}))
    if demo:
        config.update(preset.get("demo", {}).get("config", {}))
        recipe.update(preset.get("demo", {}).get("recipe", {}))
    for key, value in {
        "epochs": epochs,
        "batch_size": batch_size,
        "learning_rate": learning_rate,
        "optimizer": optimizer,
    }.items():
        if value is not None:
            recipe[key] = value
    config.update({k: v for k, v in (overrides or {}).items() if v is not None})

    output_dir = Path(output_dir or Path("runs") / model_name)
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
    log_dir = output_dir / "logs"

    keras.utils.set_random_seed(seed)

    # --- data ---
    train_split, dev_split, test_split, label_names, description, default_sample = (
        load_data(train_path, test_path, dev_path, seed=seed, demo_size=demo_size)
    )
    sample_text = sample_text or default_sample
    _log(
        f"Data: {description}\n"
        f"  train {len(train_split.texts)}, validation {len(dev_split.texts)}, "
        f"test {len(test_split.texts)}; {len(label_names)} classes: {', '.join(label_names)}"
    )

    if standardize in ("none", ""):
        standardize = None
    vectorizer = text_lib.build_vectorizer(
        train_split.texts, max_length=max_length, max_tokens=max_tokens,
        standardize=standardize,
    )
    seq_len = int(vectorizer.get_config()["output_sequence_length"])
    if max_length is None and seq_len > 400:
        vectorizer = text_lib.build_vectorizer(
            train_split.texts, max_length=400, max_tokens=max_tokens,
            standardize=standardize,
        )
        seq_len = 400
    vocabulary = text_lib.vectorizer_vocabulary(vectorizer)
    vocab_file = output_dir / "vocabulary.txt"
    if resume and vocab_file.exists():
        saved = vocab_file.read_text(encoding="utf-8").split("\n")
        if saved != vocabulary:
            raise TrainingError(
                f"--resume: the vocabulary built from the training data differs from "
                f"the one saved in {vocab_file}; was the data changed?"
            )
    vocab_file.write_text("\n".join(vocabulary), encoding="utf-8")
    (output_dir / "labels.txt").write_text("\n".join(label_names) + "\n", encoding="utf-8")
    _log(f"Vectorizer: {len(vocabulary)} words, {seq_len} tokens per text.")

    # --- embeddings ---
    matrix = pretrained_rows = None
    defaulted = embeddings is None and not demo
    if defaulted:
        embeddings = recipe.get("embeddings")
    if str(embeddings).lower() in ("none", ""):
        embeddings = None
    if embeddings:
        try:
            vectors = text_lib.load_word_vectors(embeddings)
        except ImportError as e:
            if not defaulted:
                raise
            raise TrainingError(
                f"{e} (the recipe's default vectors; pass --embeddings none to train "
                "without pretrained vectors)"
            ) from None
        init = text_lib.build_embedding_matrix(vocabulary, vectors, seed=seed)
        matrix, pretrained_rows = init.matrix, init.pretrained
        dim = matrix.shape[1]
        if config.get("hidden_dim") == config.get("embedding_dim"):
            config["hidden_dim"] = dim
        config["embedding_dim"] = dim
        _log(
            f"Embeddings: {vectors.name}, {dim}d, covering {init.coverage:.1%} of the "
            "vocabulary (the rest initialised U(-0.05, 0.05))."
        )
    elif not demo and config.get("trainable_embeddings") != "all":
        config["trainable_embeddings"] = "all"

    # --- model ---
    config.update(vocabulary_size=len(vocabulary), max_length=seq_len)
    model = zoo.build(model_name, num_classes=len(label_names), **config)
    if matrix is not None:
        model.embedding.set_pretrained(matrix, pretrained_rows)
    model.compile(
        optimizer=_make_optimizer(recipe),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    _log(
        f"Model: {model_name} ({preset.get('description', '')})\n"
        f"  {model.count_params():,} parameters; recipe: "
        + ", ".join(f"{k}={v}" for k, v in recipe.items() if k != "embeddings")
    )
    _log(f"TensorBoard: tensorboard --logdir {log_dir}")

    # --- data pipelines ---
    ids = {n: _vectorize(vectorizer, s.texts) for n, s in
           (("train", train_split), ("dev", dev_split), ("test", test_split))}
    bs = int(recipe.get("batch_size", 64))
    train_ds = _dataset(ids["train"], train_split.labels, bs, shuffle_seed=seed)
    dev_ds = _dataset(ids["dev"], dev_split.labels, bs)
    test_ds = _dataset(ids["test"], test_split.labels, bs)

    # --- callbacks ---
    extra_callbacks = list(callbacks or [])
    callbacks = [
        keras.callbacks.BackupAndRestore(str(backup_dir), save_freq="epoch"),
        keras.callbacks.TensorBoard(log_dir=str(log_dir)),
        keras.callbacks.ModelCheckpoint(str(output_dir / "checkpoints" / "last.keras")),
    ]
    (output_dir / "checkpoints").mkdir(exist_ok=True)
    if hasattr(model, "attention_maps"):
        from keras_posattn.training.attention_images import AttentionImages

        k = min(3, len(dev_split.texts))
        sample_ids = ids["dev"][:k]
        tokens = [[vocabulary[i] for i in row if i != 0] for row in sample_ids]
        callbacks.append(
            AttentionImages(str(log_dir), model.attention_maps, sample_ids, tokens)
        )

    callbacks.extend(extra_callbacks)
    if verbose is None:
        verbose = 1 if sys.stdout.isatty() else 2
    history = model.fit(
        train_ds,
        validation_data=dev_ds,
        epochs=int(recipe.get("epochs", 10)),
        callbacks=callbacks,
        verbose=verbose,
        shuffle=False,  # the dataset shuffles itself, seeded
    )

    # --- evaluation ---
    _, test_accuracy = model.evaluate(test_ds, verbose=0)
    baseline = bag_of_words_baseline(
        train_split.texts, train_split.labels, test_split.texts, test_split.labels, seed=seed
    )
    _log(
        f"\nTest accuracy: {model_name} {test_accuracy:.4f} | bag-of-words baseline "
        f"{baseline:.4f} | chance {1.0 / len(label_names):.4f}  ({len(test_split.texts)} test texts)"
    )

    # --- save the model with its vectorizer ---
    classifier = text_classifier(vectorizer, model)
    classifier.save(output_dir / "classifier.keras")
    _log(f"Saved {output_dir / 'classifier.keras'} (strings in, logits out).")

    result = TrainResult(
        model_name=model_name,
        test_accuracy=float(test_accuracy),
        baseline_accuracy=float(baseline),
        epochs_run=len(history.history.get("loss", [])),
        output_dir=output_dir,
        history={k: [float(x) for x in v] for k, v in history.history.items()},
    )

    # --- export for TF Serving, reload, predict ---
    if export:
        from keras_posattn.export import export_saved_model, predict_exported

        path = export_saved_model(model, vectorizer, label_names, name=model_name,
                                  base_dir=export_dir)
        result.export_dir = path
        _log(f"Exported SavedModel: {path}")
        if sample_text:
            prediction = predict_exported(path, [sample_text])
            label = str(prediction["label"][0])
            prob = float(prediction["probabilities"][0].max())
            result.sample_text = sample_text
            result.sample_prediction = {"label": label, "probability": prob}
            _log(f"Reloaded export predicts {label!r} (p={prob:.3f}) for: {sample_text!r}")

    summary = dataclasses.asdict(result)
    summary.update(
        output_dir=str(output_dir),
        export_dir=str(result.export_dir) if result.export_dir else None,
        config=config,
        recipe=recipe,
        data=description,
        seconds=round(time.time() - started, 1),
        versions={"tensorflow": tf.__version__, "keras": keras.__version__},
    )
    (output_dir / "result.json").write_text(json.dumps(summary, indent=2, default=str))
    return result


def text_classifier(vectorizer, model):
    """A Keras model from raw strings to logits: vectorizer + token model."""
    text = keras.Input(shape=(), dtype="string", name="text")
    return keras.Model(text, model(vectorizer(text)), name=f"{model.name}_text")
