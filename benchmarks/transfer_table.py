"""Which recipe transfers: candidates' dev accuracy per set, their mean and worst.

Reads the JSON lines ``benchmarks/recipe_dev.py`` prints (one per run; several
files or sets may be given) and writes, per model, a Markdown table with one row
per candidate: its dev accuracy on every set (mean over the seeds it ran), the
mean over the sets and the worst set. A family's default for files is the
candidate with the best mean dev accuracy over the sets (the worst set breaks
near-ties), never a test split's.

    python benchmarks/transfer_table.py results/transfer/*.jsonl [--model dpcnn]

``--patience N`` scores each run as the same recipe with early stopping at
patience N would have (Keras' ``EarlyStopping`` on ``val_accuracy``, best
weights kept): the best dev accuracy up to the epoch it would have stopped at,
read off the run's per-epoch curve. Exact, because every epoch before the stop
trains the same; a run that itself stopped on a smaller patience cannot be
read this way and is refused. The table then adds the mean epochs trained.

``--epoch-window A-B`` scores each run by its mean dev accuracy over epochs A to B
(counted from 1, both included) instead of its best epoch: a reading that
selects no epoch, so a candidate whose dev curve swings gains nothing from
keeping its luckiest epoch. A run with fewer than B epochs is refused.
"""

import argparse
import collections
import json
import statistics
import sys


def read_runs(paths):
    runs = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, start=1):
                line = line.strip()
                if not line.startswith("{"):
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as e:
                    raise SystemExit(f"{path}:{number}: not JSON: {e}") from None
                if record.get("benchmark") == "recipe_dev":
                    runs.append(record)
    return runs


def early_stopped(val_accuracy, patience):
    """``(best dev accuracy, epochs trained)`` of a run with this curve under
    Keras' ``EarlyStopping(monitor="val_accuracy", mode="max", patience=...)``:
    it stops once ``patience`` epochs in a row have not beaten the best."""
    best, wait = float("-inf"), 0
    for epoch, value in enumerate(val_accuracy, start=1):
        wait += 1
        if value > best:
            best, wait = value, 0
        if wait >= patience:
            return best, epoch
    return best, len(val_accuracy)


def with_patience(run, patience):
    """``run`` with its ``dev_accuracy`` and ``epochs_run`` as early stopping
    at ``patience`` would have left them."""
    own = (run.get("recipe") or {}).get("early_stopping")
    if own and int(own) < patience:
        raise SystemExit(f"{run['model']} {run['dataset']} {run['candidate']} seed {run['seed']}: "
                         f"the run stopped on patience {own}, its curve cannot show "
                         f"patience {patience}")
    score, epochs = early_stopped(run["val_accuracy"], patience)
    return {**run, "dev_accuracy": score, "epochs_run": epochs}


def parse_window(text):
    """``"A-B"`` -> ``(A, B)``: epochs counted from 1, ``1 <= A <= B``."""
    try:
        first, last = (int(x) for x in text.split("-"))
    except ValueError:
        raise ValueError(f"--epoch-window wants A-B (e.g. 10-20), got {text!r}") from None
    if not 1 <= first <= last:
        raise ValueError(f"--epoch-window wants 1 <= A <= B, got {text!r}")
    return first, last


def over_window(run, first, last):
    """``run`` with its ``dev_accuracy`` the mean of its dev curve over epochs
    ``first`` to ``last`` (from 1, both included)."""
    curve = run["val_accuracy"]
    if len(curve) < last:
        raise SystemExit(f"{run['model']} {run['dataset']} {run['candidate']} seed {run['seed']}: "
                         f"the run has {len(curve)} epochs, not the {last} --epoch-window "
                         f"{first}-{last} reads")
    return {**run, "dev_accuracy": statistics.fmean(curve[first - 1:last])}


def table(runs):
    """``{model: (sets, rows)}``: rows are ``(candidate, {set: (mean, n)}, mean,
    worst, mean epochs trained)`` sorted by the mean over sets (best first)."""
    scores = collections.defaultdict(lambda: collections.defaultdict(list))
    epochs = collections.defaultdict(list)
    for run in runs:
        key = (run["model"], run["candidate"])
        scores[key][run["dataset"]].append(float(run["dev_accuracy"]))
        epochs[key].append(int(run["epochs_run"]))
    out = {}
    for model in sorted({m for m, _ in scores}):
        sets = sorted({s for (m, _), per_set in scores.items() if m == model for s in per_set})
        rows = []
        for (m, candidate), per_set in scores.items():
            if m != model:
                continue
            cells = {s: (statistics.fmean(v), len(v)) for s, v in per_set.items()}
            complete = [cells[s][0] for s in sets if s in cells]
            mean = statistics.fmean(complete) if len(complete) == len(sets) else None
            worst = min(complete) if len(complete) == len(sets) else None
            rows.append((candidate, cells, mean, worst, statistics.fmean(epochs[m, candidate])))
        rows.sort(key=lambda r: (r[2] is None, -(r[2] or 0), -(r[3] or 0)))
        out[model] = (sets, rows)
    return out


def markdown(model, sets, rows, epochs=False):
    extra = " epochs trained (mean) |" if epochs else ""
    head = f"| `{model}` candidate | " + " | ".join(sets) + " | mean | worst |" + extra + "\n"
    head += "|---|" + "---:|" * (len(sets) + 2 + bool(epochs)) + "\n"
    body = ""
    for candidate, cells, mean, worst, trained in rows:
        shown = [f"{100 * cells[s][0]:.2f} ({cells[s][1]})" if s in cells else "–" for s in sets]
        tail = ["–" if x is None else f"{100 * x:.2f}" for x in (mean, worst)]
        if epochs:
            tail.append(f"{trained:.1f}")
        body += f"| {candidate} | " + " | ".join(shown + tail) + " |\n"
    return head + body


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--model", help="only this model")
    parser.add_argument("--patience", type=int, help="score each run as early stopping at this "
                        "patience would have (from its per-epoch curve)")
    parser.add_argument("--epoch-window", metavar="A-B", help="score each run by its mean dev "
                        "accuracy over epochs A to B (from 1) instead of its best epoch")
    args = parser.parse_args()
    if args.patience is not None and args.patience < 1:
        parser.error("--patience must be at least 1")
    if args.patience and args.epoch_window:
        parser.error("--patience and --epoch-window are two readings: give one")
    try:
        window = parse_window(args.epoch_window) if args.epoch_window else None
    except ValueError as e:
        parser.error(str(e))
    runs = read_runs(args.files)
    if args.patience:
        runs = [with_patience(run, args.patience) for run in runs]
    if window:
        runs = [over_window(run, *window) for run in runs]
    for model, (sets, rows) in table(runs).items():
        if args.model and model != args.model:
            continue
        print(markdown(model, sets, rows, epochs=bool(args.patience)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
