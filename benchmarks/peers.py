"""The peers on the benchmark sets: TF-IDF + LR and fastText, on our splits.

    python benchmarks/peers.py --data-dir ../shared/datasets --dataset trec sst5 sst2 mr imdb
    python benchmarks/peers.py --dataset trec --dataset mr --seeds 0 1 2 --out results/peers.json

Each set is loaded by name (``keras_posattn.datasets.load_dataset``, with
``--split-seed``, the seed the zoo's runs split with: the same train / test
split as theirs; the peers train on the training split only, as the zoo's
models do, not on train + dev); a cross-validated set (mr, cr, subj, mpqa) is
scored on the first ``--folds`` folds. TF-IDF + LR is deterministic (one run
per split); fastText runs once per seed. Prints one JSON line per (set, fold)
and a Markdown table (mean ± std over every run: folds for TF-IDF + LR, folds
x seeds for fastText); ``--out`` writes the JSON records to a file.
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from keras_posattn import peers
from keras_posattn.datasets import catalog


def measure(name, data_dir, folds, seeds, split_seed=1234):
    """One record per split of ``name``: TF-IDF + LR once, fastText per seed."""
    spec = catalog.DATASETS.get(name)
    fold_list = list(range(min(folds, catalog.NUM_FOLDS))) if spec and spec.kind == "cv" else [None]
    records = []
    for fold in fold_list:
        splits = catalog.load_dataset(name, data_dir, fold=fold, seed=split_seed)
        args = (splits.train.texts, splits.train.labels, splits.test.texts, splits.test.labels)
        start = time.time()
        tfidf = peers.tfidf_lr(*args)
        tfidf_s = time.time() - start
        start = time.time()
        fast = [peers.fasttext_accuracy(*args, seed=s) for s in seeds]
        records.append({"benchmark": "peers", "dataset": name, "fold": fold,
                        "split_seed": split_seed, "train": len(splits.train),
                        "test": len(splits.test), "tfidf_lr": tfidf, "fasttext": fast,
                        "fasttext_seeds": list(seeds), "tfidf_seconds": round(tfidf_s, 1),
                        "fasttext_seconds": round((time.time() - start) / len(seeds), 1)})
        print(json.dumps(records[-1]), flush=True)
    return records


def _mean_std(values):
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{100 * statistics.fmean(values):.2f} ± {100 * std:.2f}"


def table(records_by_set, seeds):
    """The Markdown table: a row per set."""
    lines = ["| dataset | TF-IDF + LR | fastText | runs |", "|---|---:|---:|---|"]
    for name, records in records_by_set.items():
        tfidf = [r["tfidf_lr"] for r in records]
        fast = [x for r in records for x in r["fasttext"]]
        folds = "" if records[0]["fold"] is None else f"{len(records)} folds × "
        lines.append(f"| {name} | {_mean_std(tfidf)} | {_mean_std(fast)} | "
                     f"{folds}{len(seeds)} fastText seeds |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", nargs="+", action="extend",
                        help="set(s) by name; repeatable (default: trec)")
    parser.add_argument("--data-dir",
                        help="folder of the named sets (default: $KERAS_POSATTN_DATA)")
    parser.add_argument("--folds", type=int, default=10, help="first K folds of a CV set")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="fastText seeds")
    parser.add_argument("--split-seed", type=int, default=1234,
                        help="the seed of the splits (folds, held-out dev), as the zoo's runs")
    parser.add_argument("--out", help="write the JSON records here")
    args = parser.parse_args(argv)
    if args.folds < 1:
        parser.error("--folds must be >= 1")
    by_set = {}
    try:
        for name in args.dataset or ["trec"]:
            by_set[name] = measure(name, args.data_dir, args.folds, args.seeds, args.split_seed)
    except (catalog.DatasetError, ImportError) as e:
        print(f"peers: error: {e}", file=sys.stderr)
        return 2
    print(table(by_set, args.seeds))
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps([r for rs in by_set.values() for r in rs], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
