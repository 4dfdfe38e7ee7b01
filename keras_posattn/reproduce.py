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
extend it; other settings (seed, epochs, trainer arguments) are refused, and
so is a preset whose resolved constructor arguments or recipe changed since
the record began (a zoo recipe edited between calls): the record pins them
(``resolved``), so its units never mix two recipes under one name. A
new record says so on stderr when the folder holds the same model and set
under another recipe's name (a default whose recipe name changed).
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
#: R8 has no paper number: SPE-CNN's "Reuters" (and the Kim's CNN re-runs it
#: reports) is a 10-class Reuters-21578 subset (6,472 / 720 / 2,787, its
#: Table 1), not R8's 8 classes (5,485 / 2,189).
REPORTED_KEYS = {"sst5": ("sst5", "sst_5"), "sst2": ("sst2", "sst_2"), "trec": ("trec",),
                 "r8": ("r8",), "20ng": ("20ng", "news20")}

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
    """The recipe a reproduction trains with: ``recipe``, else the trainer's
    default on a named set (``settings.default_recipe_name``)."""
    from keras_posattn.training.settings import default_recipe_name

    return recipe or default_recipe_name(model_name, demo=False, embeddings=embeddings)


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


class _Record:
    """``<results_dir>/<model>-<dataset>-<recipe>.json`` and its TABLE.md row,
    rewritten whole after every unit."""

    def __init__(self, results_dir, model_name, dataset, label, settings, command, resolved):
        self.results_dir = Path(results_dir)
        self.results_dir.mkdir(parents=True, exist_ok=True)
        stem = f"{model_name}-{dataset.replace(':', '_')}-{label}"
        self.path = self.results_dir / f"{stem}.json"
        self.runs_dir = self.results_dir / "runs" / stem
        record = None
        if self.path.exists():
            record = json.loads(self.path.read_text())
            old = record.get("settings") or {}
            fixed = {k: v for k, v in settings.items() if k not in _EXTENSIBLE}
            if {k: old.get(k) for k in fixed} != fixed:
                raise ReproduceError(
                    f"{self.path} holds a reproduction with other settings ({old}); "
                    "move it away or use another --results-dir.")
            _check_resolved(self.path, record, resolved)
            record["settings"] = settings
        if record is None:
            record = {"model": model_name, "dataset": dataset, "recipe": label,
                      "settings": settings, "paper": _paper_number(model_name, dataset),
                      "units": {}, "peers": {}}
        record["resolved"] = resolved
        record["command"] = command or " ".join(sys.argv)
        record["versions"] = _versions()
        self.record = record

    def other_recipes(self):
        """The records of the same model and set under another recipe's name
        in this folder, with how many units each holds: ``[(path, recipe,
        units)]``. A default whose recipe name changed (e.g. a preset that
        gained a 50d table) starts a new record beside its old one."""
        model, dataset = self.record["model"], self.record["dataset"]
        prefix = f"{model}-{dataset.replace(':', '_')}-"
        found = []
        for path in sorted(self.results_dir.glob(f"{prefix}*.json")):
            if path == self.path:
                continue
            try:
                other = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if (other.get("model"), other.get("dataset")) == (model, dataset):
                found.append((path, other.get("recipe"), len(other.get("units") or {})))
        return found

    def save(self):
        self.record["summary"] = _summary(self.record)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(self.record, indent=2, default=str))
        tmp.replace(self.path)  # never a half-written record
        _write_table(self.results_dir, self.record)


def _resolved(model_name, dataset, label, epochs, train_kwargs):
    """The constructor arguments and recipe this reproduction's runs get
    (``settings_for``, before the data fixes vocabulary and lengths): what
    a record pins, as JSON holds it. The recipe's ``embeddings`` are the
    vectors the runs load (``run_vectors``), not the recipe's default."""
    from keras_posattn.training.settings import RUN_OPTIONS
    from keras_posattn.training.settings import RunOptions
    from keras_posattn.training.settings import run_vectors
    from keras_posattn.training.settings import settings_for

    options = RunOptions(model_name=model_name, dataset=dataset, recipe=label, epochs=epochs,
                         **{k: v for k, v in train_kwargs.items() if k in RUN_OPTIONS})
    settings = settings_for(options)
    recipe = {**settings.recipe.as_dict(), "embeddings": run_vectors(options, settings)}
    return json.loads(json.dumps({"config": settings.config, "recipe": recipe}, default=str))


def _differences(old, new):
    """``["config.dropout: 0.1 -> 0.3", ...]`` between two ``resolved`` dicts."""
    lines = []
    for part in ("config", "recipe"):
        before, after = old.get(part) or {}, new.get(part) or {}
        for key in sorted(set(before) | set(after)):
            if before.get(key, "(unset)") != after.get(key, "(unset)"):
                lines.append(f"{part}.{key}: {json.dumps(before.get(key, '(unset)'))} -> "
                             f"{json.dumps(after.get(key, '(unset)'))}")
    return lines


def _check_resolved(path, record, resolved):
    """Refuse to extend a record whose pinned config or recipe is not the
    preset's present one; on a record from before records pinned them, list
    the units that cannot be checked (the caller pins it)."""
    old = record.get("resolved")
    if old is None:
        if record.get("units"):
            record["resolved_unchecked_units"] = sorted(record["units"])
            print(f"[reproduce] {path} was begun before records pinned the preset's config "
                  f"and recipe: its {len(record['units'])} finished units cannot be checked "
                  "against the present ones (listed as resolved_unchecked_units); new units "
                  "are pinned to them.", file=sys.stderr, flush=True)
        return
    changed = _differences(old, resolved)
    if changed:
        raise ReproduceError(
            f"{path} was recorded under another config or recipe than the preset's present "
            f"one ({'; '.join(changed)}): its units would mix two recipes. Move it away or "
            "use another --results-dir.")


def _where(run, fold):
    return f"run {run}" + ("" if fold is None else f" fold {fold}")


def _train_unit(model_name, dataset, data_dir, run, fold, seed, label, epochs, output_dir,
                progress, train_kwargs):
    """Train one unit through the trainer (resuming a unit cut short);
    ``(its entry in the record, the trainer's record)``."""
    from keras_posattn.training import trainer
    from keras_posattn.training.run_folder import RunFolder

    folder = RunFolder(output_dir)
    interrupted = folder.interrupted()
    if progress and interrupted:
        source = folder.backup if folder.backup.exists() else folder.trained
        print(f"[reproduce] {output_dir.name}: resuming from {source}", file=sys.stderr,
              flush=True)
    started = time.time()
    result = trainer.train(
        model_name, dataset=dataset, data_dir=data_dir, fold=fold, seed=seed, recipe=label,
        epochs=epochs, output_dir=output_dir, export=False, resume=interrupted,
        overwrite=not interrupted, verbose=(2 if progress else 0), **train_kwargs)
    history = result.history or {}
    unit = {
        "run": run, "fold": fold, "seed": seed, "accuracy": result.test_accuracy,
        "bag_of_words": result.baseline_accuracy, "epochs": result.epochs_run,
        "seconds": round(time.time() - started, 1),
        "best_val_accuracy": max(history.get("val_accuracy") or [float("nan")]),
        "resumed": interrupted,
        "dtype_policy": result.record.get("dtype_policy"),
        "deterministic": result.record.get("deterministic"),
        "machine": result.record.get("machine"),
    }
    return unit, result.record


def _measure_peers(book, units, dataset, data_dir, seed, progress):
    """The peers on each finished unit's own split (its seed fixes the folds
    and the held-out dev split) and with its seed for fastText; train split
    only. A record that holds them per split (an older layout) is left as
    it is."""
    from keras_posattn import peers as peers_lib
    from keras_posattn.datasets import catalog

    record = book.record
    if any(not _is_unit_key(key) for key in record["peers"]):
        return
    for run, fold, key in units:
        if key in record["units"] and key not in record["peers"]:
            unit_seed = int(seed) + run
            splits = catalog.load_dataset(dataset, data_dir, fold=fold, seed=unit_seed)
            started = time.time()
            record["peers"][key] = peers_lib.peer_accuracies(splits, seed=unit_seed)
            book.save()
            if progress:
                values = record["peers"][key]
                print(f"[peers] {_where(run, fold)}: TF-IDF + LR {values['tfidf_lr']:.4f}, "
                      f"fastText {values['fasttext']:.4f} ({time.time() - started:.0f} s)",
                      file=sys.stderr, flush=True)


def _check_arguments(model_name, recipe, runs):
    from keras_posattn import zoo
    from keras_posattn.training.settings import RECIPES
    from keras_posattn.training.settings import check_number

    try:
        zoo.get_preset(model_name)
    except (KeyError, ValueError) as e:
        raise ReproduceError(str(e).strip("'\"")) from None
    if recipe is not None and recipe not in RECIPES:
        raise ReproduceError(f"Unknown recipe {recipe!r}; choose one of {', '.join(RECIPES)}.")
    check_number("runs", runs, 1)


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
        **train_kwargs: other options of ``trainer.train`` (e.g.
            ``overrides``, ``embeddings``, ``max_length``, ``phrases``).

    Returns:
        The record written to the JSON file.
    """
    _check_arguments(model_name, recipe, runs)
    fold_list = _fold_list(dataset, folds)
    runs = int(runs)
    label = resolve_recipe(model_name, recipe, train_kwargs.get("embeddings"))
    settings = json.loads(json.dumps(
        {"runs": runs, "folds": fold_list, "epochs": epochs, "seed": int(seed),
         "train_kwargs": {k: v for k, v in sorted(train_kwargs.items())}}, default=str))
    resolved = _resolved(model_name, dataset, label, epochs, train_kwargs)
    book = _Record(results_dir, model_name, dataset, label, settings, command, resolved)
    record = book.record
    if not record["units"]:
        for path, other, count in book.other_recipes():
            units = f"{count} finished unit{'' if count == 1 else 's'}"
            print(f"[reproduce] {path} holds {units} of {model_name} on {dataset} under "
                  f"the recipe {other!r}; this run records under {label!r} in {book.path} "
                  f"(--recipe {other} with that record's settings continues it).",
                  file=sys.stderr, flush=True)
    units = list(_units(runs, fold_list))
    todo = [u for u in units if u[2] not in record["units"]]
    total, done_before = len(units), len(units) - len(todo)
    if progress and done_before:
        print(f"[reproduce] {book.path}: {done_before} of {total} units done; resuming.",
              file=sys.stderr, flush=True)
    started = time.time()
    for count, (run, fold, key) in enumerate(todo, start=1):
        unit, summary = _train_unit(model_name, dataset, data_dir, run, fold, int(seed) + run,
                                    label, epochs, book.runs_dir / key, progress, train_kwargs)
        record["vectors"] = summary.get("embeddings")
        if summary.get("embeddings_info"):
            record.setdefault("vectors_info", {})[key] = summary["embeddings_info"]
        record["recipe_used"] = summary.get("recipe_name")
        record["units"][key] = unit
        book.save()
        if progress:
            eta = (time.time() - started) / count * (len(todo) - count)
            print(f"[{done_before + count}/{total}] {_where(run, fold)}: {unit['accuracy']:.4f} "
                  f"({unit['seconds']:.0f} s, ETA {_eta(eta)})", file=sys.stderr, flush=True)
    if peers:
        _measure_peers(book, units, dataset, data_dir, seed, progress)
    book.save()
    return record
