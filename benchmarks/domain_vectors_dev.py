"""Time in-domain vector training (keras_posattn.domain_vectors), and probe it on dev data.

    # timing on IMDB's 25,000 training reviews, test coverage
    nice -n 5 .venv/bin/python benchmarks/domain_vectors_dev.py \\
        --train ../shared/datasets/imdb/train.jsonl --test ../shared/datasets/imdb/test.jsonl \\
        --methods skipgram cbow --workers 1 2 --dims 100 --epochs 5
    # a dev-split probe over dimensions and epochs on a named set
    nice -n 5 .venv/bin/python benchmarks/domain_vectors_dev.py --dataset trec \\
        --data-dir ../shared/datasets --methods skipgram cbow --dims 100 200 300 \\
        --epochs 5 20 --probe
    # ... the same probe on GloVe 50d, and on domain vectors with GloVe concatenated
    nice -n 5 .venv/bin/python benchmarks/domain_vectors_dev.py --dataset trec \\
        --data-dir ../shared/datasets --probe --baseline glove-6b-50d
    nice -n 5 .venv/bin/python benchmarks/domain_vectors_dev.py --dataset trec \\
        --data-dir ../shared/datasets --probe --combine glove-6b-50d

Each configuration (method, workers, dimension, epochs) trains once, in its
own process (so its peak memory is its own), without the cache, and prints
one JSON line: wall and CPU seconds (the CPU time of all threads: on a shared
machine the steadier figure), the 1-minute load average before and after,
tokens per second, the vocabulary (words seen ``min_count`` times, and every
training word), how much of the test texts the vectors cover (``--test`` or
``--dataset``), the process's peak RSS and a SHA-256 of the vectors (with one
worker the same in every run).

``--probe`` adds a dev-split linear probe: logistic regression (C = 1) on
each text's mean vector, trained on the training split and scored on the dev
split (a named set's own dev split, the seeded 10% the trainer holds out
where there is none; with ``--train`` a seeded 10% of the file). The test
split is never scored. It measures the vectors, not a classifier trained on
them.

The tokenisation is a throwaway one (lowercase; ``<br />`` and punctuation
become spaces; split on whitespace); the trainer passes its preprocessor's
tokens instead.
"""

import argparse
import hashlib
import itertools
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

_PUNCT = re.compile(r"<br\s*/?>|[^\w\s]")


def tokenize(text):
    return _PUNCT.sub(" ", text.lower()).split()


def read_jsonl(path):
    texts, labels = [], []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                obj = json.loads(line)
                texts.append(obj["text"])
                labels.append(obj["label"])
    return texts, np.asarray(labels)


def load(args):
    """(train texts, train labels, dev texts, dev labels, test texts or None), tokenised."""
    if args.dataset:
        from keras_posattn.datasets import catalog

        splits = catalog.load_dataset(args.dataset, args.data_dir, seed=args.seed)
        parts = (splits.train.texts, splits.train.labels, splits.dev.texts, splits.dev.labels,
                 splits.test.texts)
    else:
        texts, labels = read_jsonl(args.train)
        if args.limit and args.limit < len(texts):  # the file is sorted by label: sample
            keep = np.sort(np.random.default_rng(args.seed).permutation(len(texts))[:args.limit])
            texts, labels = [texts[i] for i in keep], labels[keep]
        order = np.random.default_rng(args.seed).permutation(len(texts))
        dev, train = order[: len(order) // 10], order[len(order) // 10:]
        test = read_jsonl(args.test)[0] if args.test else None
        parts = ([texts[i] for i in train], labels[train], [texts[i] for i in dev], labels[dev],
                 test)
        if not args.probe:  # timing: every training text
            parts = (texts, labels) + parts[2:]
    train, train_labels, dev, dev_labels, test = parts
    return ([tokenize(t) for t in train], np.asarray(train_labels), [tokenize(t) for t in dev],
            np.asarray(dev_labels), None if test is None else [tokenize(t) for t in test])


def coverage(vectors, token_lists):
    """Fractions of tokens and of distinct words with a row, and of the rest
    with a non-zero subword vector."""
    tokens = [w for text in token_lists for w in text]
    types = set(tokens)
    rows = {w for w in types if w in vectors}
    missing = types - rows
    with_subwords = sum(1 for w in missing if np.any(vectors.vector(w)))
    return {
        "tokens": round(sum(1 for w in tokens if w in rows) / len(tokens), 4),
        "words": round(len(rows) / len(types), 4),
        "missing_words": len(missing),
        "missing_with_subword_vector": round(with_subwords / max(1, len(missing)), 4),
    }


def mean_vectors(vectors, token_lists):
    cache = {}
    zeros = np.zeros(vectors.dim, np.float32)

    def vec(word):
        if word not in cache:
            if hasattr(vectors, "vector"):
                cache[word] = vectors.vector(word)
            else:  # plain WordVectors (--baseline): zeros for a missing word
                found = vectors.get(word)
                cache[word] = zeros if found is None else np.asarray(found, np.float32)
        return cache[word]

    return np.stack([np.mean([vec(w) for w in text], axis=0) if text
                     else np.zeros(vectors.dim, np.float32) for text in token_lists])


def probe(vectors, train, train_labels, dev, dev_labels):
    """Dev accuracy of logistic regression on mean vectors."""
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=1.0, max_iter=3000)
    model.fit(mean_vectors(vectors, train), train_labels)
    return round(float(model.score(mean_vectors(vectors, dev), dev_labels)), 4)


def run_one(args, method, workers, dim, epochs):
    from keras_posattn import domain_vectors as dv

    train, train_labels, dev, dev_labels, test = load(args)
    spec = dv.DomainSpec(method=method, dim=dim, epochs=epochs, combine=args.combine)
    lines = []
    load_before = os.getloadavg()[0]
    cpu = time.process_time()
    start = time.perf_counter()
    vectors = dv.train_domain_vectors(train, spec, seed=args.seed, workers=workers,
                                      cache=False, progress=lines.append)
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu
    digest = hashlib.sha256(vectors.vectors.tobytes())
    digest.update(vectors._subwords["ngram_vectors"].tobytes())
    info = vectors.info
    record = {
        "benchmark": "domain_vectors", "data": args.dataset or args.train,
        "spec": info["spec"], "workers": workers, "epochs": epochs, "texts": info["texts"],
        "tokens": info["tokens"], "seconds": round(seconds, 1), "cpu_seconds": round(cpu, 1),
        "load_average": [round(load_before, 1), round(os.getloadavg()[0], 1)],
        "tokens_per_second": round(info["tokens"] * epochs / seconds),
        "trained_words": info["trained_words"], "words": info["words"],
        "ngram_rows": int(len(vectors._subwords["buckets"])),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "vectors_sha256": digest.hexdigest()[:16],
        "epoch_lines": [line for line in lines if " epoch " in line],
    }
    if test is not None:
        record["test_coverage"] = coverage(vectors, test)
    if args.probe:
        record["dev_probe_accuracy"] = probe(vectors, train, train_labels, dev, dev_labels)
    print(json.dumps(record), flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", default="../shared/datasets/imdb/train.jsonl")
    parser.add_argument("--test", default=None)
    parser.add_argument("--dataset", default=None, help="a named set instead of --train/--test")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--methods", nargs="+", default=["skipgram", "cbow"])
    parser.add_argument("--workers", nargs="+", type=int, default=[1])
    parser.add_argument("--dims", nargs="+", type=int, default=[100])
    parser.add_argument("--epochs", nargs="+", type=int, default=[5])
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--limit", type=int, default=None, help="a seeded sample of N texts")
    parser.add_argument("--probe", action="store_true")
    parser.add_argument("--combine", default=None, help="e.g. glove-6b-50d: concatenated")
    parser.add_argument("--baseline", default=None,
                        help="probe these vectors (e.g. glove-6b-50d) instead of training")
    parser.add_argument("--one", nargs=4, type=str, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        method, workers, dim, epochs = args.one
        run_one(args, method, int(workers), int(dim), int(epochs))
        return
    if args.baseline:
        from keras_posattn.word_vectors import load_word_vectors

        train, train_labels, dev, dev_labels, test = load(args)
        vectors = load_word_vectors(args.baseline)
        print(json.dumps({"benchmark": "domain_vectors", "data": args.dataset or args.train,
                          "baseline": vectors.name, "dim": vectors.dim,
                          "dev_probe_accuracy": probe(vectors, train, train_labels, dev,
                                                      dev_labels)}), flush=True)
        return
    passed = list(argv if argv is not None else sys.argv[1:])
    for method, workers, dim, epochs in itertools.product(args.methods, args.workers,
                                                          args.dims, args.epochs):
        subprocess.run([sys.executable, str(Path(__file__).resolve()), *passed,
                        "--one", method, str(workers), str(dim), str(epochs)], check=True)


if __name__ == "__main__":
    main()
