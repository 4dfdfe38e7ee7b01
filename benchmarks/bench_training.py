"""Training throughput of zoo models: examples per second at given lengths.

Prints one JSON line per (model, length). Each model is built at its paper
settings (``zoo.build(name)``: 5 classes, a ``--vocab``-word vocabulary, the
preset's widths; ``max_length`` set to the longest length measured), trained
with the recipe's optimizer on random token ids of exactly each length (no
padding: the worst case), batch ``--batch-size``; the median of ``--repeats``
timed epochs of ``--steps`` steps after one warm-up epoch that pays for tracing
and compilation (min-max in the record). This machine is shared and noisy:
compare numbers from one run, not across days.

Hierarchical models (HCAN, HAN) get documents of ``--sentences`` sentences
of exactly ``length`` words each (``max_sentences`` set to it); the record's
``ms_per_example`` is then HCAN's Table 2 unit, training time per document
(the paper's batch is 1: ``--batch-size 1``).

    python benchmarks/bench_training.py --pattern 'cspan' --lengths 50 200
    python benchmarks/bench_training.py --pattern 'epn' 'dpcnn*' 'shallow_cnn' --lengths 50 200
    python benchmarks/bench_training.py --pattern hcan han hcan_flat --lengths 24 \
        --sentences 12 --batch-size 1 --steps 20
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time

from keras_posattn.cli import quiet_tensorflow  # noqa: E402

quiet_tensorflow()  # before TensorFlow loads: no C++ start-up chatter

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_posattn import zoo  # noqa: E402
from keras_posattn.training.recipe import Recipe  # noqa: E402
from keras_posattn.utils import count_parameters  # noqa: E402


class _EpochTimer(keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.times = []

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.times.append(time.perf_counter() - self._start)


def measure(name, length, batch_size, steps, repeats, vocab, max_length, seed=0, sentences=None,
            **overrides):
    keras.utils.set_random_seed(seed)
    family = zoo.families()[zoo.get_preset(name)["family"]]
    documents = family.preprocessor_cls.input_rank == 2
    shape = (length,)
    if documents:
        overrides["max_sentences"] = sentences
        shape = (sentences, length)
    elif sentences:
        # A flat model reads the same documents as one sequence.
        shape = (sentences * length,)
        max_length = max(max_length, sentences * length)
    model = zoo.build(name, vocabulary_size=vocab, max_length=max_length, **overrides)
    recipe = Recipe.from_dict(zoo.get_preset(name).get("recipe", {}))
    model.compile(optimizer=recipe.make_optimizer(),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(seed)
    ids = rng.integers(2, vocab, size=(batch_size * steps, *shape), dtype=np.int32)
    labels = rng.integers(0, model.num_classes, size=(batch_size * steps,), dtype=np.int32)
    data = tf.data.Dataset.from_tensor_slices((ids, labels)).batch(batch_size).cache().repeat()
    timer = _EpochTimer()
    model.fit(data, steps_per_epoch=steps, epochs=repeats + 1, callbacks=[timer], verbose=0)
    per_example = [t / (steps * batch_size) for t in timer.times[1:]]
    return {
        "benchmark": "train_examples_per_second",
        "model": name,
        "sequence_length": length,
        "input_shape": list(shape),
        "batch_size": batch_size,
        "steps": steps,
        "repeats": repeats,
        "examples_per_second": round(1.0 / statistics.median(per_example), 1),
        "ms_per_example": round(1000 * statistics.median(per_example), 2),
        "min_eps": round(1.0 / max(per_example), 1),
        "max_eps": round(1.0 / min(per_example), 1),
        "parameters_without_embedding": count_parameters(model),
        "optimizer": recipe.optimizer,
        "tensorflow": tf.__version__,
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pattern", nargs="+", default=["*"], help="zoo models (fnmatch)")
    parser.add_argument("--lengths", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--vocab", type=int, default=20000)
    parser.add_argument("--sentences", type=int,
                        help="documents of this many sentences of `length` words (flat "
                             "models read them as one sequence)")
    args = parser.parse_args()
    names = sorted({n for pattern in args.pattern for n in zoo.list_models(pattern)})
    for name in names:
        for length in args.lengths:
            record = measure(name, length, args.batch_size, args.steps, args.repeats,
                             args.vocab, max(args.lengths), sentences=args.sentences)
            print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
