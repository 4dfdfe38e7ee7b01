"""Exported SavedModels on this CPU: size on disk, load time, predict latency.

Prints one JSON line per (model, signature, batch size). For each zoo model
matching ``--pattern``: the model at paper settings (5 classes, a
``--vocab``-word vocabulary, its preset's width; frozen pretrained rows beside
trainable OOV rows where the family trains that way), a ``TextPreprocessor``
of length ``--length``, exported through ``keras_posattn.export`` and reloaded
with ``tf.saved_model.load`` in this process; then the median latency of
``--calls`` calls (after 3 warm-up calls) through the string signature
(``serving_default``, raw texts of 5 to ``--length`` words) and the token-id
signature (``token_ids``, the same texts' ids), at each batch size.

    python benchmarks/bench_serving.py --pattern 'mpsan' --batches 1 64 1024
    python benchmarks/bench_serving.py --pattern 'mpsan' --two-tables   # before the merge
    python benchmarks/bench_serving.py --pattern mpsan cspan epn hcan han --calls 10

Hierarchical models (HCAN, HAN) get documents of 1 to ``--sentences``
sentences (each of 5 to ``--length`` words) through a ``DocumentPreprocessor``
(at most ``--sentences`` sentences of ``--length`` words).

``--two-tables`` exports the training layout (frozen and trainable tables
both), to measure what merging them saves.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

from keras_posattn.cli import quiet_tensorflow  # noqa: E402

quiet_tensorflow()  # before TensorFlow loads: no C++ start-up chatter

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_posattn import zoo  # noqa: E402
from keras_posattn.export import export_saved_model  # noqa: E402
from keras_posattn.models import TextClassifier  # noqa: E402
from keras_posattn.preprocessing import DocumentPreprocessor  # noqa: E402
from keras_posattn.preprocessing import TextPreprocessor  # noqa: E402


def _median_ms(fn, calls):
    for _ in range(3):
        fn()
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return round(1e3 * statistics.median(samples), 2), round(1e3 * float(np.percentile(samples, 90)), 2)


def bench(name, vocab, length, batches, calls, two_tables, seed=0, sentences=8):
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(vocab - 2)]

    def sentence():
        return " ".join(rng.choice(words, size=int(rng.integers(5, length + 1))))

    family = zoo.families()[zoo.get_preset(name)["family"]]
    sizes = {}
    if family.preprocessor_cls.input_rank == 2:
        texts = [". ".join(sentence() for _ in range(int(rng.integers(1, sentences + 1)))) + "."
                 for _ in range(max(batches) + 2000)]
        pre = DocumentPreprocessor.from_texts(texts, max_length=length, max_sentences=sentences)
        sizes["max_sentences"] = sentences
    else:
        texts = [sentence() for _ in range(max(batches) + 2000)]
        pre = TextPreprocessor.from_texts(texts, max_length=length)
    keras.utils.set_random_seed(seed)
    model = zoo.build(name, vocabulary_size=pre.vocabulary_size, max_length=length, **sizes)
    if model.trainable_embeddings == "oov":
        matrix = rng.normal(0, 0.1, size=(pre.vocabulary_size, model.embedding_dim))
        model.embedding.set_pretrained(matrix, np.arange(pre.vocabulary_size) % 5 != 0)
    classifier = TextClassifier(pre, model)
    with tempfile.TemporaryDirectory() as tmp:
        path = export_saved_model(classifier, name=name, base_dir=tmp, warmup=False,
                                  merge_embedding=not two_tables)
        size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
        start = time.perf_counter()
        loaded = tf.saved_model.load(str(path))
        load_s = time.perf_counter() - start
        serve, by_ids = loaded.signatures["serving_default"], loaded.signatures["token_ids"]
        for batch in batches:
            batch_texts = tf.constant(texts[:batch])
            batch_ids = tf.constant(pre(batch_texts).numpy(), tf.int32)
            for signature, call in (
                ("serving_default", lambda: serve(text=batch_texts)["probabilities"].numpy()),
                ("token_ids", lambda: by_ids(token_ids=batch_ids)["probabilities"].numpy()),
            ):
                median, p90 = _median_ms(call, calls if batch < 1024 else max(5, calls // 5))
                print(json.dumps({
                    "benchmark": "serving_latency", "model": name, "signature": signature,
                    "batch_size": batch, "median_ms": median, "p90_ms": p90,
                    "export_mb": round(size / 1e6, 1), "load_s": round(load_s, 2),
                    "two_tables": two_tables, "vocab": pre.vocabulary_size, "length": length,
                    "sentences": sizes.get("max_sentences"),
                    "tensorflow": tf.__version__, "cpus": os.cpu_count(),
                }), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pattern", nargs="+", default=["*"], help="zoo models (fnmatch)")
    parser.add_argument("--vocab", type=int, default=20000)
    parser.add_argument("--length", type=int, default=50)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 64, 1024])
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--two-tables", action="store_true")
    parser.add_argument("--sentences", type=int, default=8,
                        help="most sentences per document (hierarchical models)")
    args = parser.parse_args()
    names = sorted({n for pattern in args.pattern for n in zoo.list_models(pattern)})
    for name in names:
        bench(name, args.vocab, args.length, args.batches, args.calls, args.two_tables,
              sentences=args.sentences)
    return 0


if __name__ == "__main__":
    sys.exit(main())
