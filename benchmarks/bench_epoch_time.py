"""Epoch time of a zoo model on a real training file, padding strategies compared.

Prints one JSON line per configuration: the median epoch time after the
first (which pays for tracing and XLA compilation), the first epoch's time,
and the test accuracy. Configurations run in one process, alternating, so
they share the machine's state; this machine is shared and noisy.

    python benchmarks/bench_epoch_time.py --data ../shared/datasets/trec
    python benchmarks/bench_epoch_time.py --data ../shared/datasets/trec \\
        --configs fixed buckets buckets-nojit --epochs 6 --repeats 2

Configurations: ``fixed`` pads every batch to the preprocessor's max_length
(the behaviour before batch-length bucketing); ``buckets`` groups texts of
similar length and pads each batch to one of a few widths (the default);
``-nojit`` variants turn XLA off (``jit_compile=False``). The model is built
through the trainer's stages (``resolve_settings``, ``prepare_data``,
``build_model``) with the preset's file recipe and GloVe 6B 50d vectors.
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from keras_posattn.cli import quiet_tensorflow  # noqa: E402

quiet_tensorflow()  # before TensorFlow loads: no C++ start-up chatter

import keras  # noqa: E402

from keras_posattn.training import trainer  # noqa: E402

CONFIGS = {
    "fixed": {"buckets": False, "jit_compile": "auto"},
    "buckets": {"buckets": True, "jit_compile": "auto"},
    "fixed-nojit": {"buckets": False, "jit_compile": False},
    "buckets-nojit": {"buckets": True, "jit_compile": False},
}


class _EpochTimer(keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.times = []

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.times.append(time.perf_counter() - self._start)


def run(model, data_dir, config, epochs, embeddings, seed):
    data_dir = Path(data_dir)
    settings = trainer.resolve_settings(model, demo=False, epochs=epochs, **CONFIGS[config])
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        data = trainer.prepare_data(settings, trainer.RunOptions(
            model_name=model, train_path=data_dir / "train.tsv",
            test_path=data_dir / "test.tsv", embeddings=embeddings, seed=seed))
    keras.utils.set_random_seed(seed)
    net = trainer.build_model(settings, data)
    timer = _EpochTimer()
    with tempfile.TemporaryDirectory() as out:
        trainer.fit(net, data, settings.recipe, out, seed=seed, callbacks=[timer], verbose=0)
    test = data.preprocessor.dataset(data.splits.test.texts, data.splits.test.labels, 64)
    _, accuracy = net.evaluate(test, verbose=0)
    return {
        "benchmark": "epoch_time",
        "model": model,
        "data": str(data_dir),
        "config": config,
        "epochs": epochs,
        "first_epoch_s": round(timer.times[0], 2),
        "median_epoch_after_first_s": round(statistics.median(timer.times[1:]), 2),
        "epoch_s": [round(t, 2) for t in timer.times],
        "max_length": data.preprocessor.max_length,
        "bucket_widths": data.preprocessor.bucket_widths(),
        "test_accuracy": round(float(accuracy), 4),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="mpsan")
    parser.add_argument("--data", required=True, help="folder with train.tsv and test.tsv")
    parser.add_argument("--configs", nargs="+", default=["fixed", "buckets"], choices=sorted(CONFIGS))
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--embeddings", default="glove-6b-50d")
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    for repeat in range(args.repeats):
        for config in args.configs:
            record = run(args.model, args.data, config, args.epochs, args.embeddings, args.seed)
            record["repeat"] = repeat
            print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
