"""Is IMDB's held-out dev split easier than its test split, and is it the films?

The zoo's IMDB dev split is a seeded 10% of the 25,000 training reviews
(``catalog.load_dataset("imdb", seed=S)``). IMDB's test reviews are of other
films than its training reviews (the dataset's README says so), while a random
10% of the training reviews shares its films with the other 90%. If a model
learns film-specific words (titles, actors' names), its dev score is then
higher than its test score for reasons that have nothing to do with the
recipe, and a best-dev epoch is chosen on an easier set.

This measures it without a neural network, with the TF-IDF + LR peer
(``keras_posattn.peers.fit_tfidf_lr``, one fit scoring both sets: fixed C, no selection on dev, so no
best-of-epochs bias):

1. ``neighbours``: reviews of one film have consecutive ids within a label
   in aclImdb (its urls files list them film by film), so the TF-IDF cosine of
   reviews ``id`` and ``id + 1`` is compared with that of random pairs.
2. ``splits``: for each seed, TF-IDF + LR trained on the zoo's training split
   is scored on that seed's dev and test splits; then the same-sized dev set
   is held out two ways from the 25,000 training reviews, at random (films
   shared with training) and as whole runs of ``--block`` consecutive ids
   (films mostly not shared), each scored with the model trained on the rest.

    python benchmarks/imdb_dev_gap.py --data-dir ../shared/datasets --seeds 1234 1235 1236
"""

import argparse
import json
import os
import sys
import time

import numpy as np

from keras_posattn import peers
from keras_posattn.datasets import catalog, readers


def read_imdb_train(data_dir):
    """``(label, id, text)`` of every training review, read with the package's
    JSON Lines reader (once for the labels, once for the ids)."""
    path = os.path.join(data_dir, "imdb", "train.jsonl")
    try:
        labelled = readers.read_labelled(path, label_column="label")
        numbered = readers.read_labelled(path, label_column="id")
    except readers.DataFormatError as e:
        raise SystemExit(f"{e.path}:{e.line}: not an IMDB review line ({e.reason})")
    return [(int(label), int(id_), text) for label, id_, text
            in zip(labelled.labels, numbered.labels, labelled.texts)]


def neighbours(rows, seed, pairs=5000):
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts = [text for _, _, text in rows]
    features = TfidfVectorizer(sublinear_tf=True).fit_transform(texts)  # rows are L2-normed
    where = {(label, id_): i for i, (label, id_, _) in enumerate(rows)}
    adjacent = [(i, where[(label, id_ + 1)]) for i, (label, id_, _) in enumerate(rows)
                if (label, id_ + 1) in where]
    rng = np.random.default_rng(seed)
    by_label = {}
    for i, (label, _, _) in enumerate(rows):
        by_label.setdefault(label, []).append(i)
    chosen = rng.choice(len(adjacent), size=min(pairs, len(adjacent)), replace=False)
    random_pairs = []
    for k in chosen:
        label = rows[adjacent[k][0]][0]
        a, b = rng.choice(by_label[label], size=2, replace=False)
        random_pairs.append((a, b))

    def cosines(index_pairs):
        return np.asarray([features[a].multiply(features[b]).sum() for a, b in index_pairs])

    near = cosines([adjacent[k] for k in chosen])
    far = cosines(random_pairs)
    return {"pairs": len(chosen), "adjacent_mean_cosine": float(near.mean()),
            "random_mean_cosine": float(far.mean()),
            "adjacent_above_random_p99": float(np.mean(near > np.quantile(far, 0.99)))}


def held_out(rows, seed, size, block):
    """Indices of a random and a block-wise held-out set of ``size`` reviews."""
    rng = np.random.default_rng(seed)
    random_dev = rng.choice(len(rows), size=size, replace=False)
    blocks = {}
    for i, (label, id_, _) in enumerate(rows):
        blocks.setdefault((label, id_ // block), []).append(i)
    keys = sorted(blocks)
    block_dev = []
    for k in rng.permutation(len(keys)):
        if len(block_dev) >= size:
            break
        block_dev.extend(blocks[keys[k]])
    return random_dev, np.asarray(block_dev[:size])


def accuracy(predict, texts, labels):
    return float(np.mean(predict(texts) == np.asarray(labels)))


def score(rows, dev_indices, test, seed):
    dev = set(int(i) for i in dev_indices)
    rest = [i for i in range(len(rows)) if i not in dev]
    predict = peers.fit_tfidf_lr([rows[i][2] for i in rest], [rows[i][0] for i in rest],
                                 seed=seed)
    return {"dev": accuracy(predict, [rows[i][2] for i in dev_indices],
                            [rows[i][0] for i in dev_indices]),
            "test": accuracy(predict, test.texts, test.labels)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=os.environ.get("KERAS_POSATTN_DATA"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1234, 1235, 1236])
    parser.add_argument("--block", type=int, default=100,
                        help="consecutive ids per held-out block (default 100)")
    parser.add_argument("--skip-neighbours", action="store_true")
    args = parser.parse_args(argv)
    if not args.data_dir:
        parser.error("--data-dir (or KERAS_POSATTN_DATA) is needed")
    rows = read_imdb_train(args.data_dir)
    if not args.skip_neighbours:
        started = time.time()
        out = {"what": "neighbours", **neighbours(rows, args.seeds[0]),
               "seconds": round(time.time() - started, 1)}
        print(json.dumps(out), flush=True)
    for seed in args.seeds:
        started = time.time()
        splits = catalog.load_dataset("imdb", args.data_dir, seed=seed)
        predict = peers.fit_tfidf_lr(splits.train.texts, splits.train.labels, seed=seed)
        zoo = {"dev": accuracy(predict, splits.dev.texts, splits.dev.labels),
               "test": accuracy(predict, splits.test.texts, splits.test.labels)}
        random_dev, block_dev = held_out(rows, seed, len(splits.dev), args.block)
        out = {"what": "splits", "seed": seed, "dev_size": len(splits.dev),
               "zoo_split": zoo, "random_held_out": score(rows, random_dev, splits.test, seed),
               f"blocks_of_{args.block}_held_out": score(rows, block_dev, splits.test, seed),
               "seconds": round(time.time() - started, 1)}
        print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
