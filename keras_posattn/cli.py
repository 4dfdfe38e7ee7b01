"""``keras-posattn``: train zoo models, export them for TF Serving, list them.

    keras-posattn train mpsan                      # embedded default task
    keras-posattn train mpsan --train T.tsv --test E.tsv --embeddings glove-6b-50d
    keras-posattn export runs/mpsan --name mpsan   # a versioned SavedModel
    keras-posattn models ['mpsan_*']
    keras-posattn reproduce mpsan --dataset trec --runs 3   # seeds, beside paper and peers

Every option is defined once, in ``OPTIONS``, under the name of the API
keyword it becomes (``--train`` is ``train_path``); each command lists the
options it takes (``COMMANDS``) and calls its API function with exactly the
options given on the command line (the API's defaults apply to the others).
One error boundary, in ``main``, turns the project's errors into a one-line
message and exit status 2, and Ctrl-C into ``interrupted; rerun with
--resume`` (what to do, per command) and exit status 130.
"""

import argparse
import contextlib
import dataclasses
import os
import sys
from pathlib import Path

from keras_posattn.datasets import catalog
from keras_posattn.training.settings import RECIPES
from keras_posattn.training.settings import STANDARDIZE
from keras_posattn.training.settings import STRATEGIES
from keras_posattn.training.settings import TOKENIZERS
from keras_posattn.training.settings import TUNERS
from keras_posattn.training.settings import TrainingError
from keras_posattn.training.settings import parse_overrides

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


def _set_pair(text):
    """One ``--set key=value`` (the value JSON if it parses, else a string)."""
    return next(iter(parse_overrides([text]).items()))


@dataclasses.dataclass(frozen=True)
class Option:
    """A command-line option: its flags, the API keyword it becomes
    (``dest``) and argparse's other arguments. Options have no default here
    (the API's applies): an option not given is not passed."""

    flags: tuple
    dest: str
    arguments: dict = dataclasses.field(default_factory=dict)

    def add_to(self, parser, required=False):
        parser.add_argument(*self.flags, dest=self.dest, default=argparse.SUPPRESS,
                            required=required, **self.arguments)


def _option(flags, dest, **arguments):
    """An ``Option``: space-separated flags, the API keyword, argparse's arguments."""
    return Option(tuple(flags.split()), dest, arguments)


#: Every option of every command, by the API keyword it becomes.
OPTIONS = {option.dest: option for option in (
    # the data
    _option("--train", "train_path", help="labelled training file (.tsv, .csv, .jsonl)"),
    _option("--test", "test_path", help="labelled test file"),
    _option("--dev", "dev_path", help="labelled validation file (default: 10%% of train)"),
    _option("--dataset", "dataset", help="a benchmark set by name instead of files: "
            + ", ".join(catalog.known_datasets()) + " (see `keras-posattn datasets`)"),
    _option("--data-dir", "data_dir", help="folder holding the named datasets' folders "
            "(default: $KERAS_POSATTN_DATA)"),
    _option("--fold", "fold", type=int, help="test fold 0..9 of a cross-validated set (mr, cr, "
            "subj, mpqa; default 0)"),
    _option("--phrases", "phrases", action="store_true",
            help="train on every labelled phrase of SST's training trees (sst5, sst2)"),
    _option("--embeddings", "embeddings", help="'glove-6b-50d' (default on files; "
            "spe_cnn's, shallow_cnn's, dpcnn's, hcan's, hcan_flat's, epn's, cspan's, han's and "
            "kim_cnn_nonstatic's: domain+glove-6b-50d), "
            "'domain[-skipgram|-cbow][-<dim>d][+glove-6b-50d]' (fastText vectors trained on the "
            "training texts; the 'domain' extra), a GloVe/word2vec text file, or 'none' for "
            "random initialisation"),
    _option("--unlabeled", "unlabeled", help="a file of more texts (one a line, .jsonl with "
            "'text', .tsv's last column, or a folder of .txt) the in-domain vectors also train on"),
    _option("--tokenizer", "tokenizer", choices=TOKENIZERS, help="words (default) or "
            "wordpiece: subword pieces learned on the training texts (flat models, "
            "--embeddings none; needs the 'wordpiece' extra)"),
    _option("--max-length", "max_length", type=int, help="tokens kept per text (hierarchical "
            "models: words per sentence, a longer sentence read as pieces; default: whole "
            "texts, the 99th percentile of long ones; sentences: pieces of 50)"),
    _option("--max-sentences", "max_sentences", type=int,
            help="sentences kept per document (hierarchical models: hcan, han)"),
    _option("--max-tokens", "max_tokens", type=int, help="vocabulary size cap, PAD and "
            "[UNK] included (default: the recipe's, e.g. 30002 for EPN's paper recipe and its "
            "baselines'; 0: every training word)"),
    _option("--standardize", "standardize", choices=STANDARDIZE,
            help="text standardisation before splitting on whitespace (default "
            "lower_and_split_punctuation: Unicode lower case, punctuation a word boundary)"),
    _option("--seed", "seed", type=int, help="fixes splits, data order and initialisation "
            "(default 1234; reproduce: the first run's)"),
    _option("--demo-size", "demo_size", type=int, help="training examples of the embedded task"),
    # the model and the recipe
    _option("--set", "overrides", type=_set_pair, action="append", metavar="KEY=VALUE",
            help="a model constructor argument, e.g. --set dropout=0.1 "
            "--set 'branch_masks=[\"bw\",\"fw\"]' (repeatable; tune: fixed outside the space)"),
    _option("--recipe", "recipe", choices=RECIPES,
            help="the paper's protocol, or the preset's settings tuned for 50d GloVe "
            "(default: 50d on files with the 50d vectors when the preset has one)"),
    _option("--epochs", "epochs", type=int, help="epochs instead of the recipe's (tune: per "
            "trial, default 3; hyperband: the most)"),
    _option("--batch-size", "batch_size", type=int, help="examples per step instead of the "
            "recipe's"),
    _option("--learning-rate", "learning_rate", type=float, help="instead of the recipe's"),
    _option("--optimizer", "optimizer", help="adam, adadelta, adamw, sgd, rmsprop"),
    _option("--dtype-policy", "dtype_policy", help="e.g. mixed_bfloat16 or float32 (default: "
            "the recipe's)"),
    _option("--deterministic", "deterministic", action="store_true",
            help="TensorFlow's deterministic kernels: a rerun of a seed on the same machine "
            "repeats to the bit (possibly slower)"),
    _option("--strategy", "strategy", choices=STRATEGIES,
            help="tf.distribute strategy; multi_worker reads the cluster from TF_CONFIG"),
    # what a command writes
    _option("--output-dir", "output_dir", help="where the command writes (train: the run "
            "folder, default runs/<model>; attention: the PNG files, default attention_png)"),
    _option("--export-dir --base", "export_dir", help="SavedModel repository (<dir>/<name>/"
            "<version>; default saved_models)"),
    _option("--no-export", "export", action="store_false", help="do not export a SavedModel"),
    _option("--resume", "resume", action="store_true", help="continue an interrupted run"),
    _option("--overwrite", "overwrite", action="store_true",
            help="start over: discard the run in the run folder (tune: the search)"),
    _option("--sample", "sample_text", help="sentence to predict after export"),
    _option("--projector", "projector", action="store_true",
            help="write the trained word embedding for TensorBoard's projector"),
    _option("--verbose", "verbose", type=int, choices=(0, 1, 2),
            help="Keras' progress output (tune default 0)"),
    # tune
    _option("--tuner", "tuner", choices=TUNERS, help="default random"),
    _option("--max-trials", "max_trials", type=int, help="default 5"),
    _option("--directory", "directory", help="where searches are kept (default tuning_runs)"),
    _option("--project", "project", help="search name (default: the model name)"),
    _option("--train-best", "train_best", action="store_true",
            help="train the best configuration (the recipe's epochs) and export it"),
    _option("--best-epochs", "best_epochs", type=int,
            help="epochs of --train-best (default: the recipe's)"),
    # reproduce
    _option("--runs", "runs", type=int, help="runs (seeds seed, seed+1, ...; default 3)"),
    _option("--folds", "folds", type=int, help="first K folds of a cross-validated set"),
    _option("--results-dir", "results_dir", help="default results"),
    _option("--no-peers", "peers", action="store_false",
            help="do not measure TF-IDF + LR and fastText"),
    _option("--quiet", "progress", action="store_false", help="no progress lines"),
    # export
    _option("--name", "name", help="model name (default: the model's zoo name)"),
    _option("--version", "version", type=int, help="version above every existing one (default: "
            "next)"),
    _option("--no-warmup", "warmup", action="store_false",
            help="do not write TF Serving warm-up requests"),
)}


DATA = ("train_path", "test_path", "dev_path", "dataset", "data_dir", "fold", "phrases",
        "embeddings", "unlabeled", "tokenizer", "max_length", "max_sentences", "max_tokens",
        "standardize", "seed", "demo_size")
PREPROCESSING = ("embeddings", "unlabeled", "tokenizer", "max_length", "max_sentences",
                 "max_tokens", "standardize", "phrases")


@dataclasses.dataclass(frozen=True)
class Command:
    """A subcommand: its positional arguments, the options it takes, those it
    requires, and the function that runs it."""

    name: str
    help: str
    run: object
    positionals: tuple = ()
    options: tuple = ()
    required: tuple = ()
    description: str = None
    #: What to do after Ctrl-C (said after "interrupted; ").
    on_interrupt: str = "nothing was written"


def _train(args, options):
    from keras_posattn.training.trainer import train

    train(args.model, **options)
    return 0


def _tune(args, options):
    from keras_posattn.tuning import tune

    tune(args.model, **options)
    return 0


def _reproduce(args, options):
    from keras_posattn import reproduce

    record = reproduce.reproduce(args.model, command="keras-posattn " + " ".join(sys.argv[1:]),
                                 **options)
    print(reproduce.TABLE_HEADER + (reproduce._table_row(record) or ""), end="")
    return 0


def _export(args, options):
    from keras_posattn.export import ExportedModel, export_saved_model, load_classifier

    classifier = load_classifier(args.source)
    base = options.pop("export_dir", "saved_models")
    name = options.pop("name", None) or classifier.model.name
    path = export_saved_model(classifier, name=name, base_dir=base, **options)
    size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    signatures = ", ".join(sorted(ExportedModel(path).loaded.signatures))
    print(f"Exported {path} ({size / 1e6:.1f} MB): signatures {signatures}.")
    base = Path(base).resolve()
    print(f"TF Serving model config: {base / 'models.config'}")
    print(f'Serve it: docker run -p 8501:8501 -v "{base}:/models" tensorflow/serving:2.21.0 '
          "--model_config_file=/models/models.config")
    return 0


def _attention(args, options):
    from keras_posattn.training.attention_png import write_attention_pngs

    paths = write_attention_pngs(args.source, args.texts, **options)
    if not paths:
        print("This model has no attention maps to draw.")
    for path in paths:
        print(path)
    return 0


def _models(args, options):
    from keras_posattn import zoo

    for name in zoo.list_models(args.pattern):
        print(f"{name:28s} {zoo.get_preset(name).get('description', '')}")
    return 0


def _datasets(args, options):
    data_dir = Path(options["data_dir"]) if "data_dir" in options else catalog.default_data_dir()
    for name, spec in sorted(catalog.DATASETS.items()):
        where = ""
        if data_dir is not None:
            where = "  [present]" if (data_dir / spec.folder).is_dir() else "  [absent]"
        print(f"{name:16s} {spec.description}{where}")
    print("tfds:NAME        a TensorFlow Datasets set (needs tensorflow-datasets and the network)")
    if data_dir is None:
        print(f"\nSet {catalog.DATA_VARIABLE} or pass --data-dir to read them by name.")
    return 0


MODEL = (("model", {"help": "zoo model name (see `keras-posattn models`)"}),)
SOURCE = (("source", {"help": "a .keras file, a training run folder, or (attention) an "
                              "export version folder"}),)

COMMANDS = (
    Command("train", "train a zoo model (embedded default task when no --train is given)",
            _train, MODEL,
            DATA + ("epochs", "batch_size", "learning_rate", "optimizer", "recipe", "overrides",
                    "output_dir", "export_dir", "export", "resume", "overwrite", "sample_text",
                    "dtype_policy", "deterministic", "projector", "strategy", "verbose"),
            description="Train a zoo model, evaluate it on the test split beside a bag-of-words "
            "baseline, write TensorBoard logs and checkpoints, and export a SavedModel.",
            on_interrupt="rerun with --resume"),
    Command("tune", "search a zoo model's hyperparameters with KerasTuner (embedded task by "
            "default)", _tune, MODEL,
            DATA + ("overrides", "recipe", "tuner", "max_trials", "epochs", "batch_size",
                    "directory", "project", "overwrite", "train_best", "best_epochs",
                    "export_dir", "verbose"),
            description="Search the model family's space (tuning/<family>.py: the paper's "
            "values as defaults) with KerasTuner, log every trial to TensorBoard's HParams "
            "dashboard, print the best trials, and optionally train and export the best "
            "configuration. An interrupted search resumes. For a distributed search, run the "
            "same command on every machine with KERASTUNER_TUNER_ID (chief / tuner0 / "
            "tuner1...), KERASTUNER_ORACLE_IP and KERASTUNER_ORACLE_PORT set.",
            on_interrupt="rerun the same command to resume the search"),
    Command("reproduce", "train a model on a benchmark set over seeds (and folds), beside the "
            "paper and the peers", _reproduce, MODEL,
            ("dataset", "data_dir", "runs", "recipe", "folds", "epochs", "seed", "results_dir",
             "overrides", "batch_size", "learning_rate", "optimizer", "dtype_policy",
             "deterministic", "peers",
             "progress") + PREPROCESSING,
            required=("dataset",),
            description="Train --runs seeds (every fold, or the first --folds, of a "
            "cross-validated set) through the trainer and record results/<model>-<dataset>-"
            "<recipe>.json and a TABLE.md row beside the paper and the peers; resumes.",
            on_interrupt="rerun the same command to resume"),
    Command("export", "export a trained classifier as a versioned SavedModel for TF Serving",
            _export, SOURCE, ("name", "version", "export_dir", "warmup"),
            description="Export a TextClassifier (a .keras file, or a `keras-posattn train` "
            "run folder: its classifier.keras or checkpoints/last.keras) to <base>/<name>/"
            "<version>/ with the serving_default, token_ids and classify signatures, TF "
            "Serving warm-up requests, and a models.config entry."),
    Command("attention", "draw a model's attention for some texts as PNG files", _attention,
            SOURCE + (("texts", {"nargs": "+", "help": "the texts to look at"}),),
            ("output_dir",),
            description="Render the attention heat-maps (and pooling weights) of a saved "
            "classifier (.keras file or training run folder) or of an export (its attention "
            "signature) for the given texts, as the TensorBoard IMAGES tab shows them."),
    Command("models", "list zoo models", _models,
            (("pattern", {"nargs": "?", "default": "*"}),)),
    Command("datasets", "list the benchmark sets --dataset reads by name", _datasets, (),
            ("data_dir",)),
)


def build_parser():
    """The ``keras-posattn`` parser: every command with its options."""
    parser = argparse.ArgumentParser(prog="keras-posattn", description=__doc__.split("\n")[0])
    parser.add_argument("--tf-logs", action="store_true",
                        help="show TensorFlow's own start-up and C++ log lines")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        p = sub.add_parser(command.name, help=command.help, description=command.description)
        for name, arguments in command.positionals:
            p.add_argument(name, **arguments)
        for dest in command.options:
            OPTIONS[dest].add_to(p, required=dest in command.required)
        p.set_defaults(handler=command)
    return parser


def given_options(args):
    """The options given on the command line, as API keywords (``--set``
    pairs as one dict)."""
    command = args.handler
    given = {dest: getattr(args, dest) for dest in command.options if hasattr(args, dest)}
    if "overrides" in given:
        given["overrides"] = dict(given["overrides"])
    return given


#: The errors that mean the user's input is wrong (printed as one line, exit
#: status 2) rather than a bug (a traceback). Every error class of the project
#: but ``TrainingError`` is a ``ValueError``.
USER_ERRORS = (TrainingError, ValueError, FileNotFoundError, FileExistsError, ImportError)


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.tf_logs:
        os.environ[TF_LOGS_VARIABLE] = "1"
    quiet_tensorflow()
    try:
        return args.handler.run(args, given_options(args))
    except USER_ERRORS as e:
        message = str(e).splitlines()[0] if str(e) else repr(e)
        print(f"keras-posattn: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # Training stops at the end of a batch (training.callbacks.CleanInterrupt).
        print(f"keras-posattn: interrupted; {args.handler.on_interrupt}", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
