"""The peers on the benchmark sets: TF-IDF + LR and fastText, on our splits.

    python benchmarks/peers.py --data-dir ../shared/datasets --dataset trec sst5 sst2 mr mpqa imdb r8
    python benchmarks/peers.py --dataset mr --folds 10 --seeds 0 1 2 --out results/peers.json

Each set is loaded by name (``keras_posattn.datasets.load_dataset``: the same
train / test split as the zoo's runs; the peers train on the training split
only, as the zoo's models do, not on train + dev); a cross-validated set
(mr, cr, subj, mpqa) is scored on the first ``--folds`` folds and averaged.
TF-IDF + LR is deterministic (one run per split); fastText runs once per
seed. Prints a Markdown table and one JSON line per (set, fold); ``--out``
also writes them to a file.
"""

import argparse
import json
import statistics
import sys
import time

from keras_posattn.cli import quiet_tensorflow  # noqa: E402

quiet_tensorflow()

from keras_posattn import peers  # noqa: E402
from keras_posattn.datasets import catalog  # noqa: E402


def measure(name, data_dir, folds, seeds):
    spec = catalog.DATASETS[name]
    fold_list = list(range(folds)) if spec.kind == "cv" else [None]
    records = []
    for fold in fold_list:
        splits = catalog.load_dataset(name, data_dir, fold=fold)
        args = (splits.train.texts, splits.train.labels, splits.test.texts, splits.test.labels)
        start = time.time()
        tfidf = peers.tfidf_lr(*args)
        tfidf_s = time.time() - start
        start = time.time()
        fast = [peers.fasttext_accuracy(*args, seed=s) for s in seeds]
        records.append({"benchmark": "peers", "dataset": name, "fold": fold,
                        "train": len(splits.train), "test": len(splits.test),
                        "tfidf_lr": tfidf, "fasttext": fast, "tfidf_seconds": round(tfidf_s, 1),
                        "fasttext_seconds": round((time.time() - start) / len(seeds), 1)})
        print(json.dumps(records[-1]), flush=True)
    return records


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", nargs="+", default=["trec"])
    parser.add_argument("--data-dir")
    parser.add_argument("--folds", type=int, default=10, help="folds of a CV set")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out")
    args = parser.parse_args()
    rows, everything = [], []
    for name in args.dataset:
        records = measure(name, args.data_dir, args.folds, args.seeds)
        everything += records
        tfidf = [r["tfidf_lr"] for r in records]
        fast = [statistics.fmean(r["fasttext"]) for r in records]
        spread = [x for r in records for x in r["fasttext"]]
        folds = "" if records[0]["fold"] is None else f" ({len(records)} folds)"
        rows.append(f"| {name}{folds} | {100 * statistics.fmean(tfidf):.1f} | "
                    f"{100 * statistics.fmean(fast):.1f} ± "
                    f"{100 * (statistics.stdev(spread) if len(spread) > 1 else 0):.1f} "
                    f"({len(args.seeds)} seeds) |")
    print("| set | TF-IDF + LR | fastText |\n|---|---:|---:|")
    print("\n".join(rows))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(everything, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
