"""Which recipe transfers: candidates' dev accuracy per set, their mean and worst.

Reads the JSON lines ``benchmarks/recipe_dev.py`` prints (one per run; several
files or sets may be given) and writes, per model, a Markdown table with one row
per candidate: its dev accuracy on every set (mean over the seeds it ran), the
mean over the sets and the worst set. A family's default for files is the
candidate with the best mean dev accuracy over the sets (the worst set breaks
near-ties), never a test split's.

    python benchmarks/transfer_table.py results/transfer/*.jsonl [--model dpcnn]
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


def table(runs):
    """``{model: (sets, rows)}``: rows are ``(candidate, {set: (mean, n)}, mean, worst)``
    sorted by the mean over sets (best first)."""
    scores = collections.defaultdict(lambda: collections.defaultdict(list))
    for run in runs:
        key = (run["model"], run["candidate"])
        scores[key][run["dataset"]].append(float(run["dev_accuracy"]))
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
            rows.append((candidate, cells, mean, worst))
        rows.sort(key=lambda r: (r[2] is None, -(r[2] or 0), -(r[3] or 0)))
        out[model] = (sets, rows)
    return out


def markdown(model, sets, rows):
    head = f"| `{model}` candidate | " + " | ".join(sets) + " | mean | worst |\n"
    head += "|---|" + "---:|" * (len(sets) + 2) + "\n"
    body = ""
    for candidate, cells, mean, worst in rows:
        shown = [f"{100 * cells[s][0]:.2f} ({cells[s][1]})" if s in cells else "–" for s in sets]
        tail = ["–" if x is None else f"{100 * x:.2f}" for x in (mean, worst)]
        body += f"| {candidate} | " + " | ".join(shown + tail) + " |\n"
    return head + body


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--model", help="only this model")
    args = parser.parse_args()
    for model, (sets, rows) in table(read_runs(args.files)).items():
        if args.model and model != args.model:
            continue
        print(markdown(model, sets, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
