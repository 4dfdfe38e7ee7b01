"""``keras-posattn reproduce``: a paper's protocol, several seeds, beside the peers.

``reproduce("mpsan", "trec", runs=3)`` trains the model ``runs`` times (seeds
``seed``, ``seed + 1``, ...) on a benchmark set by name - on every fold of a
cross-validated set (or the first ``folds``) - through the trainer (model
selection on the dev split when the recipe asks for it), and records:

- ``<results_dir>/<model>-<dataset>-<recipe>.json``: every finished unit (a
  run, or a run's fold) with its test accuracy, epochs, wall time and seed;
  per run the accuracy (a CV run: the mean over its folds); mean, std and
  best over runs; the paper's number for the set (the preset's
  ``reported``); the two peers (``keras_posattn.peers``) on the same
  split and fold; vectors, versions and the command;
- a row of ``<results_dir>/TABLE.md`` for (model, dataset, recipe), replaced
  when the reproduction is run again.

The peers are measured once per split, after the runs (a record without
them gets them on the next call). The JSON is rewritten after every unit,
so an interrupted reproduction
resumes where it stopped: finished units are skipped, and a unit cut short
mid-training resumes from its last epoch checkpoint (the trainer's
``resume``). Runs train in ``<results_dir>/runs/<model>-<dataset>-<recipe>/``.
"""

import json
import statistics
import sys
import time
from pathlib import Path

TABLE_HEADER = (
    "| model | dataset | recipe | vectors | ours: mean ± std (runs) | best | paper | gap | "
    "TF-IDF + LR | fastText |\n|---|---|---|---|---:|---:|---:|---:|---:|---:|\n"
)

#: The preset's ``reported`` keys under other names (the catalog's name -> the paper's key).
REPORTED_KEYS = {"sst5": ("sst5", "sst_5"), "sst2": ("sst2", "sst_2"), "trec": ("trec",),
                 "r8": ("r8", "reuters")}


class ReproduceError(ValueError):
    """A reproduction cannot start (unknown model or dataset, bad arguments)."""


def _paper_number(model_name, dataset):
    from keras_posattn import zoo

    reported = zoo.get_preset(model_name).get("reported") or {}
    for key in REPORTED_KEYS.get(dataset, (dataset,)):
        value = reported.get(key)
        if isinstance(value, (int, float)):
            return float(value)
    return None


def _units(runs, fold_list):
    for run in range(runs):
        for fold in fold_list:
            yield run, fold, f"run{run}" if fold is None else f"run{run}-fold{fold}"


def _summary(record):
    per_run = {}
    for unit in record["units"].values():
        per_run.setdefault(unit["run"], []).append(unit["accuracy"])
    expected = len(record["settings"]["folds"])
    complete = [statistics.fmean(v) for _, v in sorted(per_run.items()) if len(v) == expected]
    summary = {"runs_finished": len(complete), "per_run_accuracy": complete}
    if complete:
        summary.update(mean=statistics.fmean(complete), best=max(complete),
                       std=statistics.stdev(complete) if len(complete) > 1 else 0.0)
        if record.get("paper") is not None:
            summary["gap_to_paper"] = 100 * summary["mean"] - record["paper"]
    peers = {}
    for values in record["peers"].values():
        for name, value in values.items():
            peers.setdefault(name, []).append(value)
    summary["peers"] = {name: statistics.fmean(v) for name, v in peers.items()}
    return summary


def _table_row(record):
    s = record["summary"]
    if not s.get("runs_finished"):
        return None

    def pct(x):
        return "–" if x is None else f"{100 * x:.2f}"

    paper = record.get("paper")
    gap = "–" if paper is None else f"{100 * s['mean'] - paper:+.2f}"
    folds = record["settings"]["folds"]
    cv = "" if folds == [None] else f", {len(folds)} folds"
    return (f"| `{record['model']}` | {record['dataset']} | {record['recipe']} | "
            f"{record.get('vectors') or 'none'} | {pct(s['mean'])} ± {100 * s['std']:.2f} "
            f"({s['runs_finished']}{cv}) | {pct(s['best'])} | "
            f"{'–' if paper is None else f'{paper:.2f}'} | {gap} | "
            f"{pct(s['peers'].get('tfidf_lr'))} | {pct(s['peers'].get('fasttext'))} |\n")


def _write_table(results_dir, record):
    path = Path(results_dir) / "TABLE.md"
    rows = []
    if path.exists():
        rows = [line + "\n" for line in path.read_text().splitlines()[2:] if line.strip()]
    key = f"| `{record['model']}` | {record['dataset']} | {record['recipe']} |"
    rows = [r for r in rows if not r.startswith(key)]
    row = _table_row(record)
    if row:
        rows.append(row)
    path.write_text(TABLE_HEADER + "".join(sorted(rows)))


def reproduce(model_name, dataset, runs=3, recipe=None, folds=None, data_dir=None,
              results_dir="results", epochs=None, seed=1234, peers=True, progress=True,
              command=None, **train_kwargs):
    """Reproduce ``model_name`` on ``dataset`` (see the module docstring).

    Args:
        model_name: a zoo model.
        dataset: a benchmark set by name (``keras_posattn.datasets``).
        runs: runs with seeds ``seed``, ``seed + 1``, ...
        recipe: ``"paper"`` or ``"50d"`` (default: as the trainer picks).
        folds: for a cross-validated set, the first ``folds`` folds (default:
            all 10); state fewer folds wherever the numbers go.
        epochs: override the recipe's epochs (e.g. for a quick look).
        peers: also measure TF-IDF + LR and fastText on each split.
        progress: a line per unit on stderr (and Keras' epoch lines).
        **train_kwargs: passed to ``trainer.train`` (e.g. ``overrides``,
            ``embeddings``, ``max_length``, ``phrases``).

    Returns:
        The record written to the JSON file.
    """
    import keras
    import tensorflow as tf

    from keras_posattn import zoo
    from keras_posattn.datasets import catalog
    from keras_posattn.training import trainer

    try:
        zoo.get_preset(model_name)
    except (KeyError, ValueError) as e:
        raise ReproduceError(str(e).strip("'\"")) from None
    spec = catalog.DATASETS.get(dataset)
    if spec is None:
        raise ReproduceError(f"Unknown dataset {dataset!r}; known: "
                             f"{', '.join(sorted(catalog.DATASETS))}.")
    if int(runs) < 1:
        raise ReproduceError(f"runs must be >= 1, got {runs}.")
    fold_list = [None]
    if spec.kind == "cv":
        fold_list = list(range(catalog.NUM_FOLDS if folds is None else int(folds)))
    elif folds is not None:
        raise ReproduceError(f"{dataset} has a fixed test split; --folds applies to "
                             "cross-validated sets (mr, cr, subj, mpqa).")

    label = recipe or "default"
    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / f"{model_name}-{dataset}-{label}.json"
    settings = {"runs": int(runs), "folds": fold_list, "epochs": epochs, "seed": int(seed),
                "train_kwargs": {k: v for k, v in sorted(train_kwargs.items())}}
    record = None
    if path.exists():
        record = json.loads(path.read_text())
        if record.get("settings") != json.loads(json.dumps(settings, default=str)):
            raise ReproduceError(
                f"{path} holds a reproduction with other settings ({record.get('settings')}); "
                "move it away or use another --results-dir.")
    if record is None:
        record = {"model": model_name, "dataset": dataset, "recipe": label,
                  "settings": settings, "paper": _paper_number(model_name, dataset),
                  "units": {}, "peers": {}}
    record["command"] = command or " ".join(sys.argv)
    record["versions"] = {"tensorflow": tf.__version__, "keras": keras.__version__}

    def save():
        record["summary"] = _summary(record)
        path.write_text(json.dumps(record, indent=2, default=str))
        _write_table(results_dir, record)

    def fill_peers():
        # The peers on every split of the reproduction (the first run's seed).
        from keras_posattn import peers as peers_lib

        for fold in fold_list:
            peer_key = "test" if fold is None else f"fold{fold}"
            if peer_key not in record["peers"]:
                splits = catalog.load_dataset(dataset, data_dir, fold=fold, seed=int(seed),
                                              phrases=False)
                record["peers"][peer_key] = peers_lib.peer_accuracies(splits, seed=0)
                save()

    todo = [u for u in _units(int(runs), fold_list) if u[2] not in record["units"]]
    total, done_before = len(fold_list) * int(runs), len(record["units"])
    if progress and done_before:
        print(f"[reproduce] {path}: {done_before} of {total} units done; resuming.",
              file=sys.stderr)
    started = time.time()
    for count, (run, fold, key) in enumerate(todo, start=1):
        unit_seed = int(seed) + run
        output_dir = results_dir / "runs" / f"{model_name}-{dataset}-{label}" / key
        interrupted = (output_dir / "backup").exists()
        unit_start = time.time()
        result = trainer.train(
            model_name, dataset=dataset, data_dir=data_dir, fold=fold, seed=unit_seed,
            recipe=recipe, epochs=epochs, output_dir=output_dir, export=False,
            resume=interrupted, overwrite=not interrupted,
            verbose=(2 if progress else 0), **train_kwargs)
        summary = json.loads((output_dir / "result.json").read_text())
        record["vectors"] = summary.get("embeddings")
        record["recipe_used"] = summary.get("recipe_name")
        record["units"][key] = {
            "run": run, "fold": fold, "seed": unit_seed, "accuracy": result.test_accuracy,
            "bag_of_words": result.baseline_accuracy, "epochs": result.epochs_run,
            "seconds": round(time.time() - unit_start, 1),
            "best_val_accuracy": max(result.history.get("val_accuracy", [float("nan")])),
        }
        save()
        if progress:
            elapsed = time.time() - started
            eta = elapsed / count * (len(todo) - count)
            print(f"[reproduce {done_before + count}/{total}] {key}: "
                  f"{result.test_accuracy:.4f} ({record['units'][key]['seconds']:.0f} s, "
                  f"ETA {eta / 60:.1f} min)", file=sys.stderr)
    if peers:
        fill_peers()
    save()
    return record


def add_parser(subparsers):
    """The ``reproduce`` subcommand."""
    p = subparsers.add_parser(
        "reproduce", help="train a model on a benchmark set over seeds (and folds), beside "
                          "the paper and the peers",
        description=__doc__.split("\n\n")[1])
    p.add_argument("model", help="zoo model name")
    p.add_argument("--dataset", required=True, help="benchmark set by name (keras-posattn "
                   "datasets)")
    p.add_argument("--data-dir", help="folder of the named sets (default: $KERAS_POSATTN_DATA)")
    p.add_argument("--runs", type=int, default=3, help="runs (seeds seed, seed+1, ...)")
    p.add_argument("--recipe", choices=("paper", "50d"),
                   help="the paper's protocol or the preset's 50d settings (default: as train)")
    p.add_argument("--folds", type=int, help="first K folds of a cross-validated set")
    p.add_argument("--epochs", type=int, help="override the recipe's epochs")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--results-dir", default="results")
    p.add_argument("--phrases", action="store_true", help="train on SST's phrases")
    p.add_argument("--max-length", type=int)
    p.add_argument("--max-tokens", type=int)
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="model constructor argument (repeatable)")
    p.add_argument("--no-peers", dest="peers", action="store_false",
                   help="do not measure TF-IDF + LR and fastText")
    p.add_argument("--quiet", dest="progress", action="store_false")
    return p


def main_from_args(args):
    """Run ``reproduce`` from parsed arguments; an exit code."""
    from keras_posattn.datasets.catalog import DatasetError
    from keras_posattn.training.trainer import TrainingError, parse_overrides

    kwargs = {}
    if args.phrases:
        kwargs["phrases"] = True
    for key in ("max_length", "max_tokens"):
        if getattr(args, key) is not None:
            kwargs[key] = getattr(args, key)
    try:
        overrides = parse_overrides(args.overrides)
        if overrides:
            kwargs["overrides"] = overrides
        record = reproduce(args.model, args.dataset, runs=args.runs, recipe=args.recipe,
                           folds=args.folds, data_dir=args.data_dir,
                           results_dir=args.results_dir, epochs=args.epochs, seed=args.seed,
                           peers=args.peers, progress=args.progress,
                           command="keras-posattn " + " ".join(sys.argv[1:]), **kwargs)
    except (ReproduceError, TrainingError, DatasetError, ImportError, FileNotFoundError) as e:
        print(f"keras-posattn: error: {e}", file=sys.stderr)
        return 2
    row = _table_row(record)
    print(TABLE_HEADER + (row or ""), end="")
    return 0
