"""Two ``reproduce`` results folders side by side: the same rows trained with
two kinds of word vectors (GloVe 6B 50d, and in-domain vectors).

    python benchmarks/vectors_table.py results/glove results/domain

For every (model, dataset, recipe) present in both folders: test accuracy
(mean ± std over the runs recorded, in %), the best dev epoch's accuracy
(the number a choice may be made on), epochs run and seconds per epoch,
and the peers (TF-IDF + LR, fastText) measured by the same commands. Rows
present in one folder only are listed with the other side empty.
"""

import argparse
import json
import statistics
from pathlib import Path


def _rows(folder):
    rows = {}
    for path in sorted(Path(folder).glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        if "units" not in record:
            continue
        units = [u for u in record["units"].values() if u.get("accuracy") is not None]
        if units:
            rows[(record["model"], record["dataset"], record["recipe"])] = (record, units)
    return rows


def _mean_std(values):
    values = [100 * v for v in values]
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.2f} ± {std:.2f} ({len(values)})"


def _cell(entry):
    if entry is None:
        return ["", "", ""]
    record, units = entry
    test = _mean_std([u["accuracy"] for u in units])
    dev = f"{100 * statistics.mean(u['best_val_accuracy'] for u in units):.2f}"
    per_epoch = statistics.mean(u["seconds"] / max(u["epochs"], 1) for u in units)
    epochs = "/".join(str(u["epochs"]) for u in units)
    return [test, dev, f"{epochs} · {per_epoch:.0f} s"]


def _peers(entry):
    record, _ = entry
    peers = list(record.get("peers", {}).values())
    if not peers:
        return ["", ""]
    return [f"{100 * statistics.mean(p[k] for p in peers):.2f}" for k in ("tfidf_lr", "fasttext")]


def table(first, second, names=("GloVe 50d", "in-domain")):
    a, b = _rows(first), _rows(second)
    head = ["model", "dataset", "recipe"]
    for name in names:
        head += [f"{name}: test", f"{name}: dev", f"{name}: epochs · s/epoch"]
    head += ["TF-IDF + LR", "fastText"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 3 + "---:|" * (len(head) - 3)]
    for key in sorted(set(a) | set(b), key=lambda k: (k[1], k[0], k[2])):
        model, dataset, recipe = key
        cells = [f"`{model}`", dataset, recipe, *_cell(a.get(key)), *_cell(b.get(key)),
                 *_peers(a.get(key) or b.get(key))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first")
    parser.add_argument("second")
    parser.add_argument("--names", nargs=2, default=["GloVe 50d", "in-domain"])
    args = parser.parse_args(argv)
    print(table(args.first, args.second, tuple(args.names)))


if __name__ == "__main__":
    main()
