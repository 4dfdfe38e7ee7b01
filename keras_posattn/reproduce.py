"""``keras-posattn reproduce``: a paper's protocol, several seeds, beside the peers.

``reproduce("mpsan", "trec", runs=3)`` trains the model ``runs`` times (seeds
``seed``, ``seed + 1``, ...) on a benchmark set by name - on every fold of a
cross-validated set (or the first ``folds``) - through the trainer (model
selection on the dev split when the recipe asks for it), and records:

- ``<results_dir>/<model>-<dataset>-<recipe>.json``: every finished unit (a
  run, or a run's fold) with its test accuracy, epochs, wall time and seed;
  per run the accuracy (a CV run: the mean over its folds); mean, std and
  best over runs; the paper's number for the set (the preset's
  ``reported``); the two peers (``keras_posattn.peers``) on each unit's own
  split, fold and seed; vectors, versions and the command;
- a row of ``<results_dir>/TABLE.md`` for (model, dataset, recipe), replaced
  when the reproduction is run again.

The recipe is named in the file: without ``recipe``, the one the trainer
picks (``50d`` on the 50d GloVe vectors for a preset with such a table, else
``paper``). The peers are measured after the runs (a unit without them gets
them on the next call). The JSON is rewritten after every unit, so an
interrupted reproduction resumes where it stopped: finished units are
skipped, and a unit cut short mid-training resumes from its last epoch
checkpoint (the trainer's ``resume``). More runs or folds than a record holds
extend it; other settings (seed, epochs, trainer arguments) are refused.
Runs train in ``<results_dir>/runs/<model>-<dataset>-<recipe>/``.
"""

import json
import platform
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
                 "r8": ("r8", "reuters"), "20ng": ("20ng", "news20")}

#: Settings that may grow between calls without invalidating the recorded units.
_EXTENSIBLE = ("runs", "folds")


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


def resolve_recipe(model_name, recipe=None, embeddings=None):
    """The recipe the trainer uses on a named set: ``recipe``, else ``"50d"``
    on the 50d GloVe vectors for a preset with a ``glove50d`` table, else
    ``"paper"`` (as ``trainer._train`` decides)."""
    from keras_posattn import zoo

    if recipe is not None:
        return recipe
    preset = zoo.get_preset(model_name)
    vectors = embeddings or preset.get("recipe", {}).get("embeddings")
    return "50d" if ("glove50d" in preset and vectors == "glove-6b-50d") else "paper"


def _units(runs, fold_list):
    for run in range(runs):
        for fold in fold_list:
            yield run, fold, f"run{run}" if fold is None else f"run{run}-fold{fold}"


def _is_unit_key(key):
    return key.startswith("run")


def _versions():
    from importlib import metadata

    out = {"python": platform.python_version()}
    for name in ("keras-posattn", "tensorflow", "keras", "numpy", "scikit-learn",
                 "fasttext-wheel", "fasttext"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def _mean_std(values):
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def _summary(record):
    settings = record["settings"]
    wanted = {key for _, _, key in _units(settings["runs"], settings["folds"])}
    per_run = {}
    for key, unit in record["units"].items():
        if key in wanted:
            per_run.setdefault(unit["run"], []).append(unit["accuracy"])
    expected = len(settings["folds"])
    complete = [statistics.fmean(v) for _, v in sorted(per_run.items()) if len(v) == expected]
    summary = {"runs_finished": len(complete), "per_run_accuracy": complete}
    if complete:
        summary["mean"], summary["std"] = _mean_std(complete)
        summary["best"] = max(complete)
        if record.get("paper") is not None:
            summary["gap_to_paper"] = 100 * summary["mean"] - record["paper"]
    # The peers: per run the mean over its folds, then mean and std over runs.
    # (A record written before the peers were measured per unit holds them
    # per split, keyed "test" or "fold<k>": those are averaged as they are.)
    peer_runs = {}
    for key, values in record["peers"].items():
        if _is_unit_key(key):
            if key not in wanted or key not in record["units"]:
                continue
            run = record["units"][key]["run"]
        else:
            run = "split"
        for name, value in values.items():
            peer_runs.setdefault(name, {}).setdefault(run, []).append(value)
    summary["peers"], summary["peers_std"] = {}, {}
    for name, runs in peer_runs.items():
        mean, std = _mean_std([statistics.fmean(v) for v in runs.values()])
        summary["peers"][name], summary["peers_std"][name] = mean, std
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


def _fold_list(dataset, folds):
    from keras_posattn.datasets import catalog

    if dataset.startswith("tfds:"):
        spec = None
    else:
        spec = catalog.DATASETS.get(dataset)
        if spec is None:
            try:  # the catalog's own error: close matches and the known names
                catalog.load_dataset(dataset)
            except catalog.DatasetError as e:
                raise ReproduceError(str(e)) from None
            raise ReproduceError(f"Unknown dataset {dataset!r}.")  # pragma: no cover
    if spec is not None and spec.kind == "cv":
        if folds is not None and not 1 <= int(folds) <= catalog.NUM_FOLDS:
            raise ReproduceError(f"--folds must be in 1..{catalog.NUM_FOLDS}, got {folds}.")
        return list(range(catalog.NUM_FOLDS if folds is None else int(folds)))
    if folds is not None:
        raise ReproduceError(f"{dataset} has a fixed test split; --folds applies to "
                             "cross-validated sets (mr, cr, subj, mpqa).")
    return [None]


def _eta(seconds):
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def reproduce(model_name, dataset, runs=3, recipe=None, folds=None, data_dir=None,
              results_dir="results", epochs=None, seed=1234, peers=True, progress=True,
              command=None, **train_kwargs):
    """Reproduce ``model_name`` on ``dataset`` (see the module docstring).

    Args:
        model_name: a zoo model.
        dataset: a benchmark set by name (``keras_posattn.datasets``).
        runs: runs with seeds ``seed``, ``seed + 1``, ...
        recipe: ``"paper"`` or ``"50d"`` (default: as the trainer picks, see
            ``resolve_recipe``; the file is named by the recipe used).
        folds: for a cross-validated set, the first ``folds`` folds (default:
            all 10); state fewer folds wherever the numbers go.
        data_dir: the folder of the named sets (default ``KERAS_POSATTN_DATA``).
        results_dir: where the JSON, ``TABLE.md`` and the run folders go.
        epochs: override the recipe's epochs (e.g. for a quick look).
        seed: the first run's seed (it also fixes the run's folds and dev split).
        peers: also measure TF-IDF + LR and fastText on each unit's split.
        progress: a line per unit on stderr (and Keras' epoch lines).
        command: the command line to record (default ``sys.argv``).
        **train_kwargs: passed to ``trainer.train`` (e.g. ``overrides``,
            ``embeddings``, ``max_length``, ``phrases``).

    Returns:
        The record written to the JSON file.
    """
    from keras_posattn import zoo
    from keras_posattn.datasets import catalog
    from keras_posattn.training import trainer

    try:
        zoo.get_preset(model_name)
    except (KeyError, ValueError) as e:
        raise ReproduceError(str(e).strip("'\"")) from None
    if recipe is not None and recipe not in trainer.RECIPES:
        raise ReproduceError(f"Unknown recipe {recipe!r}; choose one of "
                             f"{', '.join(trainer.RECIPES)}.")
    if int(runs) < 1:
        raise ReproduceError(f"runs must be >= 1, got {runs}.")
    fold_list = _fold_list(dataset, folds)
    runs = int(runs)
    label = resolve_recipe(model_name, recipe, train_kwargs.get("embeddings"))

    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / f"{model_name}-{dataset.replace(':', '_')}-{label}.json"
    settings = json.loads(json.dumps(
        {"runs": runs, "folds": fold_list, "epochs": epochs, "seed": int(seed),
         "train_kwargs": {k: v for k, v in sorted(train_kwargs.items())}}, default=str))
    record = None
    if path.exists():
        record = json.loads(path.read_text())
        old = record.get("settings") or {}
        fixed = {k: v for k, v in settings.items() if k not in _EXTENSIBLE}
        if {k: old.get(k) for k in fixed} != fixed:
            raise ReproduceError(
                f"{path} holds a reproduction with other settings ({old}); "
                "move it away or use another --results-dir.")
        record["settings"] = settings
    if record is None:
        record = {"model": model_name, "dataset": dataset, "recipe": label,
                  "settings": settings, "paper": _paper_number(model_name, dataset),
                  "units": {}, "peers": {}}
    record["command"] = command or " ".join(sys.argv)
    record["versions"] = _versions()

    def save():
        record["summary"] = _summary(record)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(record, indent=2, default=str))
        tmp.replace(path)  # never a half-written record
        _write_table(results_dir, record)

    runs_dir = results_dir / "runs" / f"{model_name}-{dataset.replace(':', '_')}-{label}"
    units = list(_units(runs, fold_list))
    todo = [u for u in units if u[2] not in record["units"]]
    total, done_before = len(units), len(units) - len(todo)
    if progress and done_before:
        print(f"[reproduce] {path}: {done_before} of {total} units done; resuming.",
              file=sys.stderr, flush=True)
    started = time.time()
    for count, (run, fold, key) in enumerate(todo, start=1):
        unit_seed = int(seed) + run
        output_dir = runs_dir / key
        interrupted = (output_dir / "backup").exists()
        if progress and interrupted:
            print(f"[reproduce] {key}: resuming from the checkpoint in {output_dir / 'backup'}",
                  file=sys.stderr, flush=True)
        unit_start = time.time()
        result = trainer.train(
            model_name, dataset=dataset, data_dir=data_dir, fold=fold, seed=unit_seed,
            recipe=label, epochs=epochs, output_dir=output_dir, export=False,
            resume=interrupted, overwrite=not interrupted,
            verbose=(2 if progress else 0), **train_kwargs)
        summary = json.loads((output_dir / "result.json").read_text())
        record["vectors"] = summary.get("embeddings")
        record["recipe_used"] = summary.get("recipe_name")
        history = result.history or {}
        record["units"][key] = {
            "run": run, "fold": fold, "seed": unit_seed, "accuracy": result.test_accuracy,
            "bag_of_words": result.baseline_accuracy, "epochs": result.epochs_run,
            "seconds": round(time.time() - unit_start, 1),
            "best_val_accuracy": max(history.get("val_accuracy") or [float("nan")]),
            "resumed": interrupted,
            "dtype_policy": summary.get("dtype_policy"),
        }
        save()
        if progress:
            elapsed = time.time() - started
            eta = elapsed / count * (len(todo) - count)
            where = f"run {run}" + ("" if fold is None else f" fold {fold}")
            print(f"[{done_before + count}/{total}] {where}: {result.test_accuracy:.4f} "
                  f"({record['units'][key]['seconds']:.0f} s, ETA {_eta(eta)})",
                  file=sys.stderr, flush=True)

    legacy = any(not _is_unit_key(key) for key in record["peers"])
    if peers and not legacy:
        # The peers on each unit's own split (its seed fixes the folds and the
        # held-out dev split) and with its seed for fastText. Train split only.
        from keras_posattn import peers as peers_lib

        for run, fold, key in units:
            if key in record["units"] and key not in record["peers"]:
                unit_seed = int(seed) + run
                splits = catalog.load_dataset(dataset, data_dir, fold=fold, seed=unit_seed)
                peer_start = time.time()
                record["peers"][key] = peers_lib.peer_accuracies(splits, seed=unit_seed)
                save()
                if progress:
                    values = record["peers"][key]
                    where = f"run {run}" + ("" if fold is None else f" fold {fold}")
                    print(f"[peers] {where}: TF-IDF + LR {values['tfidf_lr']:.4f}, fastText "
                          f"{values['fasttext']:.4f} ({time.time() - peer_start:.0f} s)",
                          file=sys.stderr, flush=True)
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
    p.add_argument("--seed", type=int, default=1234, help="the first run's seed")
    p.add_argument("--results-dir", default="results")
    p.add_argument("--embeddings", help="'glove-6b-50d', a vectors file or 'none' "
                   "(default: the recipe's)")
    p.add_argument("--phrases", action="store_true", help="train on SST's phrases")
    p.add_argument("--max-length", type=int)
    p.add_argument("--max-tokens", type=int)
    p.add_argument("--max-sentences", type=int, help="sentences per document (hierarchical "
                   "models)")
    p.add_argument("--batch-size", type=int)
    p.add_argument("--dtype-policy", help="e.g. mixed_bfloat16 or float32 (default: the "
                   "recipe's)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="model constructor argument (repeatable)")
    p.add_argument("--no-peers", dest="peers", action="store_false",
                   help="do not measure TF-IDF + LR and fastText")
    p.add_argument("--quiet", dest="progress", action="store_false")
    return p


def main_from_args(args):
    """Run ``reproduce`` from parsed arguments; an exit code."""
    from keras_posattn.datasets.catalog import DatasetError
    from keras_posattn.datasets.readers import DataFormatError
    from keras_posattn.training.trainer import TrainingError, parse_overrides

    kwargs = {}
    if getattr(args, "phrases", False):
        kwargs["phrases"] = True
    for key in ("embeddings", "max_length", "max_tokens", "max_sentences", "batch_size",
                "dtype_policy"):
        if getattr(args, key, None) is not None:
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
    except (ReproduceError, TrainingError, DatasetError, DataFormatError, ImportError,
            FileNotFoundError) as e:
        print(f"keras-posattn: error: {str(e).splitlines()[0] if str(e) else e!r}",
              file=sys.stderr)
        return 2
    row = _table_row(record)
    print(TABLE_HEADER + (row or ""), end="")
    return 0
