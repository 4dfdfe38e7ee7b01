"""Does a deep EPN learn with 50d-sized embeddings? Train accuracy per epoch
on a small IMDB sample, by pyramid depth and embedding dropout.

    python benchmarks/epn_depth_diagnosis.py --data-dir ../shared/datasets \
        --configs 1:0.5 7:0.5 7:0.1 7:0.0

Each config is ``blocks:embedding_dropout``. 3,000 training reviews and 1,000
held-out validation reviews (seeded samples), the first 128 tokens, a
30,000-word vocabulary, a 50d embedding initialised U(-0.05, 0.05), no
embedding L2, Adam 1e-3, batch 100; prints one JSON line per config with the
train and validation accuracy of every epoch.
"""

import argparse
import json
import sys

from keras_posattn.cli import quiet_tensorflow

quiet_tensorflow()

import keras
import numpy as np

from keras_posattn import zoo
from keras_posattn.datasets import load_dataset
from keras_posattn.preprocessing import TextPreprocessor


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir")
    parser.add_argument("--configs", nargs="+", default=["1:0.5", "7:0.5", "7:0.1", "7:0.0"])
    parser.add_argument("--train", type=int, default=3000)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    splits = load_dataset("imdb", args.data_dir)
    rng = np.random.default_rng(0)
    train = rng.permutation(len(splits.train.texts))[: args.train]
    dev = rng.permutation(len(splits.dev.texts))[:1000]
    texts = [splits.train.texts[i] for i in train]
    pre = TextPreprocessor.from_texts(texts, max_length=128, max_tokens=30000)
    x, y = pre(texts).numpy(), splits.train.labels[train]
    x_dev = pre([splits.dev.texts[i] for i in dev]).numpy()
    y_dev = splits.dev.labels[dev]
    for config in args.configs:
        blocks, dropout = config.split(":")
        keras.utils.set_random_seed(0)
        model = zoo.build("epn", num_classes=2, vocabulary_size=pre.vocabulary_size,
                          max_length=128, embedding_dim=50, embedding_l2=0.0,
                          num_blocks=int(blocks), dropout=float(dropout))
        model.compile(optimizer=keras.optimizers.Adam(1e-3),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
        history = model.fit(x, y, batch_size=100, epochs=args.epochs,
                            validation_data=(x_dev, y_dev), verbose=0).history
        print(json.dumps({"benchmark": "epn_depth_diagnosis", "blocks": int(blocks),
                          "embedding_dropout": float(dropout),
                          "train_accuracy": [round(a, 3) for a in history["accuracy"]],
                          "val_accuracy": [round(a, 3) for a in history["val_accuracy"]]}),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
