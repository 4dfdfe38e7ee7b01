"""``keras-posattn``: train zoo models, export them for TF Serving, list them.

    keras-posattn train mpsan                      # embedded default task
    keras-posattn train mpsan --train T.tsv --test E.tsv --embeddings glove-6b-50d
    keras-posattn export runs/mpsan --name mpsan   # a versioned SavedModel
    keras-posattn models ['mpsan_*']
    keras-posattn reproduce mpsan --dataset trec --runs 3   # seeds, beside paper and peers
"""

import argparse
import contextlib
import os
import sys
from pathlib import Path

TF_LOGS_VARIABLE = "KERAS_POSATTN_TF_LOGS"


@contextlib.contextmanager
def _stderr_silenced():
    """Point file descriptor 2 at /dev/null (C++ code writes there directly)."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def quiet_tensorflow():
    """Import TensorFlow without its C++ start-up chatter.

    TensorFlow prints absl and CUDA lines ("All log messages before
    absl::InitializeLog()...", "Could not find cuda drivers", "failed call to
    cuInit") on a machine without a GPU, some before its own log level can
    apply. The command's output should start with the program's own lines:
    the log level is raised to errors-off (which also hides the CUDA probe
    when devices are first used) and stderr is silenced while TensorFlow
    loads. Devices are not touched here, so a ``tf.distribute`` strategy can
    still be created at program start. ``--tf-logs`` (or
    ``KERAS_POSATTN_TF_LOGS=1``) keeps TensorFlow's logs.
    """
    if os.environ.get(TF_LOGS_VARIABLE):
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    with _stderr_silenced():
        import tensorflow  # noqa: F401


def _dataset_names():
    from keras_posattn.datasets import catalog

    return catalog.known_datasets()


def _add_data_arguments(p):
    """The data options `train` and `tune` share."""
    p.add_argument("--train", dest="train_path", help="labelled training file (.tsv, .csv, .jsonl)")
    p.add_argument("--test", dest="test_path", help="labelled test file")
    p.add_argument("--dev", dest="dev_path", help="labelled validation file (default: 10%% of train)")
    p.add_argument("--dataset", help="a benchmark set by name instead of files: "
                   + ", ".join(_dataset_names()) + " (see `keras-posattn datasets`)")
    p.add_argument("--data-dir", help="folder holding the named datasets' folders "
                   "(default: $KERAS_POSATTN_DATA)")
    p.add_argument("--fold", type=int, help="test fold 0..9 of a cross-validated set (mr, cr, "
                   "subj, mpqa; default 0)")
    p.add_argument("--phrases", action="store_true",
                   help="train on every labelled phrase of SST's training trees (sst5, sst2)")
    p.add_argument("--embeddings", help="'glove-6b-50d' (default with --train), a GloVe/"
                   "word2vec text file, or 'none' for random initialisation")
    p.add_argument("--max-length", type=int, help="tokens kept per text (per sentence for "
                   "hierarchical models)")
    p.add_argument("--max-sentences", type=int,
                   help="sentences kept per document (hierarchical models: hcan, han)")
    p.add_argument("--max-tokens", type=int, help="vocabulary size cap")
    p.add_argument("--standardize", default="lower_and_split_punctuation",
                   choices=("lower_and_split_punctuation", "split_punctuation",
                            "lower_and_strip_punctuation", "lower", "strip_punctuation", "none"),
                   help="text standardisation before splitting on whitespace (default: "
                   "Unicode lower case, punctuation a word boundary)")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--demo-size", type=int, help="training examples of the embedded task")


def _train_parser(sub):
    p = sub.add_parser(
        "train",
        help="train a zoo model (embedded default task when no --train is given)",
        description="Train a zoo model, evaluate it beside a bag-of-words baseline, "
        "write TensorBoard logs and checkpoints, and export a SavedModel.",
    )
    p.add_argument("model", help="zoo model name (see `keras-posattn models`)")
    _add_data_arguments(p)
    p.add_argument("--epochs", type=int)
    p.add_argument("--batch-size", type=int)
    p.add_argument("--learning-rate", type=float)
    p.add_argument("--optimizer", help="adam, adadelta, adamw, sgd, rmsprop")
    p.add_argument("--recipe", choices=("paper", "50d"),
                   help="the paper's protocol, or the preset's settings tuned for 50d GloVe "
                   "(default: 50d on files with the 50d vectors when the preset has one)")
    p.add_argument("--set", dest="overrides", action="append", metavar="KEY=VALUE",
                   help="override a model argument, e.g. --set dropout=0.1 "
                   "--set 'branch_masks=[\"bw\",\"fw\"]' (repeatable)")
    p.add_argument("--output-dir", help="run folder (default runs/<model>)")
    p.add_argument("--export-dir", default="saved_models", help="SavedModel base folder")
    p.add_argument("--no-export", dest="export", action="store_false")
    p.add_argument("--resume", action="store_true", help="continue an interrupted run")
    p.add_argument("--overwrite", action="store_true", help="discard an interrupted run")
    p.add_argument("--sample", dest="sample_text", help="sentence to predict after export")
    p.add_argument("--dtype-policy", help="e.g. mixed_bfloat16")
    p.add_argument("--projector", action="store_true",
                   help="write the trained word embedding for TensorBoard's projector")
    p.add_argument("--strategy", choices=("default", "mirrored", "multi_worker"),
                   help="tf.distribute strategy; multi_worker reads the cluster from TF_CONFIG")
    p.add_argument("--verbose", type=int, choices=(0, 1, 2))


def _tune_parser(sub):
    p = sub.add_parser(
        "tune",
        help="search a zoo model's hyperparameters with KerasTuner (embedded task by default)",
        description="Search the model family's space (tuning/<family>.py: the paper's values "
        "as defaults) with KerasTuner, log every trial to TensorBoard's HParams dashboard, print "
        "the best trials, and optionally train and export the best configuration. An "
        "interrupted search resumes. For a distributed search, run the same command on every "
        "machine with KERASTUNER_TUNER_ID (chief / tuner0 / tuner1...), KERASTUNER_ORACLE_IP "
        "and KERASTUNER_ORACLE_PORT set.",
    )
    p.add_argument("model", help="zoo model name the search starts from")
    _add_data_arguments(p)
    p.add_argument("--set", dest="overrides", action="append", metavar="KEY=VALUE",
                   help="fix a model argument outside the search space (repeatable)")
    p.add_argument("--tuner", default="random", choices=("random", "bayesian", "hyperband"))
    p.add_argument("--max-trials", type=int, default=5)
    p.add_argument("--epochs", type=int, default=3, help="epochs per trial (hyperband: max)")
    p.add_argument("--batch-size", type=int)
    p.add_argument("--directory", default="tuning_runs", help="where searches are kept")
    p.add_argument("--project", help="search name (default: the model name)")
    p.add_argument("--overwrite", action="store_true", help="start the search over")
    p.add_argument("--train-best", action="store_true",
                   help="train the best configuration (the recipe's epochs) and export it")
    p.add_argument("--best-epochs", type=int, help="epochs of --train-best (default: the recipe's)")
    p.add_argument("--export-dir", default="saved_models", help="SavedModel base folder")
    p.add_argument("--verbose", type=int, default=0, choices=(0, 1, 2))


def _export_parser(sub):
    p = sub.add_parser(
        "export",
        help="export a trained classifier as a versioned SavedModel for TF Serving",
        description="Export a TextClassifier (a .keras file, or a `keras-posattn train` run "
        "folder: its classifier.keras or checkpoints/last.keras) to <base>/<name>/<version>/ "
        "with the serving_default, token_ids and classify signatures, TF Serving warm-up "
        "requests, and a models.config entry.",
    )
    p.add_argument("source", help="a .keras file or a training run folder")
    p.add_argument("--name", help="model name (default: the model's zoo name)")
    p.add_argument("--version", type=int, help="version above every existing one (default: next)")
    p.add_argument("--base", default="saved_models", help="model repository folder")
    p.add_argument("--no-warmup", dest="warmup", action="store_false",
                   help="do not write TF Serving warm-up requests")


def _attention_parser(sub):
    p = sub.add_parser(
        "attention",
        help="draw a model's attention for some texts as PNG files",
        description="Render the attention heat-maps (and pooling weights) of a saved "
        "classifier (.keras file or training run folder) or of an export (its attention "
        "signature) for the given texts, as the TensorBoard IMAGES tab shows them.",
    )
    p.add_argument("source", help="a .keras file, a training run folder, or an export version folder")
    p.add_argument("texts", nargs="+", help="the texts to look at")
    p.add_argument("--output-dir", default="attention_png", help="where the PNG files go")


def _attention(args):
    from keras_posattn.training.attention_png import write_attention_pngs

    paths = write_attention_pngs(args.source, args.texts, args.output_dir)
    if not paths:
        print("This model has no attention maps to draw.")
    for path in paths:
        print(path)
    return 0


def _export(args):
    from keras_posattn.export import export_saved_model, load_classifier

    classifier = load_classifier(args.source)
    name = args.name or classifier.model.name
    path = export_saved_model(classifier, name=name, base_dir=args.base, version=args.version,
                              warmup=args.warmup)
    size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    import tensorflow as tf

    signatures = ", ".join(sorted(tf.saved_model.load(str(path)).signatures))
    print(f"Exported {path} ({size / 1e6:.1f} MB): signatures {signatures}.")
    base = Path(args.base).resolve()
    print(f"TF Serving model config: {base / 'models.config'}")
    print(f'Serve it: docker run -p 8501:8501 -v "{base}:/models" tensorflow/serving:2.21.0 '
          "--model_config_file=/models/models.config")
    return 0


def _datasets(args):
    from keras_posattn.datasets import catalog

    data_dir = Path(args.data_dir) if args.data_dir else catalog.default_data_dir()
    for name, spec in sorted(catalog.DATASETS.items()):
        where = ""
        if data_dir is not None:
            where = "  [present]" if (data_dir / spec.folder).is_dir() else "  [absent]"
        print(f"{name:16s} {spec.description}{where}")
    print("tfds:NAME        a TensorFlow Datasets set (needs tensorflow-datasets and the network)")
    if data_dir is None:
        print(f"\nSet {catalog.DATA_VARIABLE} or pass --data-dir to read them by name.")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="keras-posattn", description=__doc__.split("\n")[0])
    parser.add_argument("--tf-logs", action="store_true",
                        help="show TensorFlow's own start-up and C++ log lines")
    sub = parser.add_subparsers(dest="command", required=True)
    _train_parser(sub)
    _tune_parser(sub)
    _export_parser(sub)
    _attention_parser(sub)
    from keras_posattn import reproduce

    reproduce.add_parser(sub)
    models = sub.add_parser("models", help="list zoo models")
    models.add_argument("pattern", nargs="?", default="*")
    datasets = sub.add_parser("datasets", help="list the benchmark sets --dataset reads by name")
    datasets.add_argument("--data-dir", help="also say which are present in this folder "
                          "(default: $KERAS_POSATTN_DATA)")
    args = parser.parse_args(argv)
    if args.tf_logs:
        os.environ[TF_LOGS_VARIABLE] = "1"
    quiet_tensorflow()

    if args.command == "models":
        from keras_posattn import zoo

        for name in zoo.list_models(args.pattern):
            print(f"{name:28s} {zoo.get_preset(name).get('description', '')}")
        return 0

    if args.command == "datasets":
        return _datasets(args)

    if args.command == "reproduce":
        return reproduce.main_from_args(args)

    if args.command in ("export", "attention"):
        try:
            return (_export if args.command == "export" else _attention)(args)
        except (FileNotFoundError, FileExistsError, ValueError, TypeError) as e:
            print(f"keras-posattn: error: {e}", file=sys.stderr)
            return 2

    from keras_posattn.datasets.readers import DataFormatError
    from keras_posattn.training.trainer import TrainingError, parse_overrides, train

    if args.command == "tune":
        from keras_posattn.tuning import tune as run
    else:
        run = train
    kwargs = vars(args).copy()
    for key in ("command", "tf_logs"):
        kwargs.pop(key)
    try:
        kwargs["overrides"] = parse_overrides(kwargs.pop("overrides"))
        run(kwargs.pop("model"), **kwargs)
    except (TrainingError, DataFormatError, FileNotFoundError, ImportError, ValueError) as e:
        print(f"keras-posattn: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
