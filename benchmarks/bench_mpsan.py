"""MPSAN speed on this machine: training examples/s and exported latency.

Prints one JSON line per measurement. Medians over repeats; this machine is
shared and noisy, so read the spread too.

    python benchmarks/bench_mpsan.py                      # defaults below
    python benchmarks/bench_mpsan.py --lengths 50 200 --batch-size 64 --repeats 5

Training: ``zoo.build(model)`` at paper settings (d = 300, 5 classes, a
20,000-word vocabulary), Adadelta as in the paper's recipe, every sequence
full length (no padding: the worst case for a given length), the median time
of ``--steps`` steps over ``--repeats`` repeats after a warm-up epoch that
pays for tracing.

Export latency: the same model with a ``TextPreprocessor`` of the given
vocabulary and length 50, exported through ``keras_posattn.export`` and reloaded with
``tf.saved_model.load``; the ``serving_default`` signature is called on raw
strings at batch 1 and 64.
"""

import argparse
import json
import os
import platform
import statistics
import tempfile
import time

from keras_posattn.cli import quiet_tensorflow  # noqa: E402

quiet_tensorflow()  # before TensorFlow loads: no C++ start-up chatter

import numpy as np  # noqa: E402
import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_posattn import zoo  # noqa: E402


def _emit(**record):
    record.setdefault("tensorflow", tf.__version__)
    record.setdefault("keras", keras.__version__)
    record.setdefault("cpus", os.cpu_count())
    record.setdefault("machine", platform.machine())
    print(json.dumps(record), flush=True)


class _EpochTimer(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.times.append(time.perf_counter() - self._start)

    def on_train_begin(self, logs=None):
        self.times = []


def bench_training(model_name, length, batch_size, steps, repeats, vocab, classes, seed=0):
    keras.utils.set_random_seed(seed)
    model = zoo.build(model_name, num_classes=classes, vocabulary_size=vocab, max_length=length)
    model.compile(
        optimizer=keras.optimizers.Adadelta(0.5),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    rng = np.random.default_rng(seed)
    ids = rng.integers(2, vocab, size=(batch_size * steps, length), dtype=np.int32)
    labels = rng.integers(0, classes, size=(batch_size * steps,), dtype=np.int32)
    ds = tf.data.Dataset.from_tensor_slices((ids, labels)).batch(batch_size).cache().repeat()
    timer = _EpochTimer()
    model.fit(ds, steps_per_epoch=steps, epochs=repeats + 1, callbacks=[timer], verbose=0)
    times = timer.times[1:]  # the first epoch traces the graph
    per_example = [t / (steps * batch_size) for t in times]
    _emit(
        benchmark="train_examples_per_second",
        model=model_name,
        sequence_length=length,
        batch_size=batch_size,
        steps=steps,
        repeats=repeats,
        examples_per_second=round(1.0 / statistics.median(per_example), 1),
        min_eps=round(1.0 / max(per_example), 1),
        max_eps=round(1.0 / min(per_example), 1),
        parameters=model.count_params(),
    )
    return model


def bench_export_latency(model_name, vocab, classes, batch_sizes, calls, seed=0):
    from keras_posattn.export import export_saved_model
    from keras_posattn.models import TextClassifier
    from keras_posattn.preprocessing import TextPreprocessor

    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(vocab - 2)]
    texts = [" ".join(rng.choice(words, size=rng.integers(5, 50))) for _ in range(2000)]
    preprocessor = TextPreprocessor.from_texts(texts, max_length=50)
    model = zoo.build(
        model_name,
        num_classes=classes,
        vocabulary_size=preprocessor.vocabulary_size,
        max_length=50,
    )
    classifier = TextClassifier(preprocessor, model)
    with tempfile.TemporaryDirectory() as tmp:
        path = export_saved_model(classifier, name=model_name, base_dir=tmp)
        size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
        start = time.perf_counter()
        serve = tf.saved_model.load(str(path)).signatures["serving_default"]
        load_seconds = time.perf_counter() - start
        for batch in batch_sizes:
            batch_texts = tf.constant(texts[:batch])
            for _ in range(5):
                serve(text=batch_texts)
            samples = []
            for _ in range(calls):
                t0 = time.perf_counter()
                serve(text=batch_texts)["probabilities"].numpy()
                samples.append(time.perf_counter() - t0)
            _emit(
                benchmark="export_latency",
                model=model_name,
                batch_size=batch,
                calls=calls,
                median_ms=round(1e3 * statistics.median(samples), 2),
                p90_ms=round(1e3 * float(np.percentile(samples, 90)), 2),
                load_seconds=round(load_seconds, 2),
                export_bytes=size,
            )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="mpsan")
    parser.add_argument("--lengths", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--vocab", type=int, default=20000)
    parser.add_argument("--classes", type=int, default=5)
    parser.add_argument("--latency-batches", type=int, nargs="+", default=[1, 64])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--skip-training", action="store_true")
    parser.add_argument("--skip-latency", action="store_true")
    args = parser.parse_args()
    if not args.skip_training:
        for length in args.lengths:
            bench_training(args.model, length, args.batch_size, args.steps, args.repeats,
                           args.vocab, args.classes)
    if not args.skip_latency:
        bench_export_latency(args.model, args.vocab, args.classes, args.latency_batches,
                             args.calls)


if __name__ == "__main__":
    main()
