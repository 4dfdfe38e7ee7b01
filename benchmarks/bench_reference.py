"""Zoo models against the same architecture written from stock Keras: speed ratios.

For each zoo model matching ``--pattern`` and each length, in one process on
the same data: our model at paper settings (``zoo.build(name,
vocabulary_size=--vocab, max_length=max(--lengths))``) and its reference
build from stock Keras (``benchmarks/keras_posattn_reference/<family>.py``:
``MultiHeadAttention`` with ``attention_mask`` where it fits, otherwise plain
``keras.ops`` code with dense (n, n) masks and stock ``Softmax`` masking),
with our weights copied in so both compute the same logits. Both are
compiled with the preset recipe's optimizer (a fresh one each), the same
loss and the same ``jit_compile`` (``--jit-compile auto`` resolves Keras'
choice for our model and gives the reference the same), then trained on the
same random token ids (every position a real token, as
``bench_training.py``): one warm-up epoch each (tracing, compilation), then
``--repeats`` timed epochs of ``--steps`` steps, alternating ours and the
reference so that load on the machine hits both alike.

One JSON line per measurement. ``ratio`` is always ours / reference of the
line's quantity (``ratio_of``): examples per second (above 1: ours is
faster), milliseconds (below 1: ours is faster) or peak memory (below 1:
ours needs less). Ratios are what to compare; single absolute times on a
shared machine are not. A model or length that cannot run prints a line
with an ``error`` field and the script goes on.

- Training throughput (default; ``--no-train`` skips it):
  ``{"benchmark": "reference_ratio", "ours_eps", "reference_eps", "ratio", ...}``.
- ``--memory``: each (model, implementation, length) trains ``--steps``
  steps in its own subprocess (which builds both models, as the ratio run
  does, then keeps one); the line holds each process's peak resident memory
  (``ru_maxrss``) and its resident memory before training. A process that
  dies (out of memory) is reported as such.
- ``--latency``: both models' inference (token ids in, logits out) exported
  the same way (``keras.export.ExportArchive``, one ``tf.function`` endpoint
  with a fixed ``[None, ...]`` int32 signature; our frozen and trainable
  embedding rows merged into one table, as ``keras_posattn.export`` serves
  them), reloaded with ``tf.saved_model.load`` and called at each of
  ``--latency-batches``: median of ``--calls`` alternating calls.

Hierarchical models (input rank 2: HAN, HCAN) get documents of
``--sentences`` sentences of ``length`` words and report milliseconds per
document.

    python benchmarks/bench_reference.py --pattern 'mpsan*' --lengths 50 200 1000
    python benchmarks/bench_reference.py --pattern dpcnn shallow_cnn --memory --no-train
    python benchmarks/bench_reference.py --pattern hcan han --lengths 24 --sentences 12 \
        --batch-size 1 --steps 20
"""

import argparse
import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from keras_posattn.cli import quiet_tensorflow  # noqa: E402

quiet_tensorflow()  # before TensorFlow loads: no C++ start-up chatter

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from bench_training import _EpochTimer  # noqa: E402
from keras_posattn import zoo  # noqa: E402
from keras_posattn.export import merged_embedding_model  # noqa: E402
from keras_posattn.training.recipe import Recipe  # noqa: E402
from keras_posattn_reference import build_reference  # noqa: E402

IMPLEMENTATIONS = ("ours", "reference")


def environment():
    gpus = tf.config.list_physical_devices("GPU")
    return {
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
        "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "gpus": len(gpus),
        "machine": platform.machine(),
    }


def layout(name, length, max_length, sentences):
    """``(input shape without batch, build overrides, max_length, documents?)``
    as ``bench_training.measure`` lays inputs out."""
    family = zoo.families()[zoo.get_preset(name)["family"]]
    documents = family.preprocessor_cls.input_rank == 2
    overrides = {}
    shape = (length,)
    if documents:
        overrides["max_sentences"] = sentences
        shape = (sentences, length)
    elif sentences:
        shape = (sentences * length,)  # a flat model reads the documents as one sequence
        max_length = max(max_length, sentences * length)
    return shape, overrides, max_length, documents


def build_pair(name, vocab, max_length, overrides, seed=0, policy="float32", reference=True):
    """Ours under the dtype ``policy`` (e.g. ``"mixed_bfloat16"``), the
    reference in float32 (what a user writes by default), same weights."""
    keras.utils.set_random_seed(seed)
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(policy)
    try:
        ours = zoo.build(name, vocabulary_size=vocab, max_length=max_length, **overrides)
    finally:
        keras.mixed_precision.set_global_policy(previous)
    return ours, build_reference(ours) if reference else None


def compile_pair(name, ours, reference, jit_compile):
    """Compile both with the preset recipe's optimizer (one each) and the same
    loss; ``"auto"`` is resolved by Keras for our model and the result given
    to the reference. Returns the recipe and the ``jit_compile`` used."""
    recipe = Recipe.from_dict(zoo.get_preset(name).get("recipe", {}))
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    ours.compile(optimizer=recipe.make_optimizer(), loss=loss, jit_compile=jit_compile)
    resolved = bool(ours.jit_compile)
    reference.compile(optimizer=recipe.make_optimizer(), loss=loss, jit_compile=resolved)
    return recipe, resolved


def random_batches(shape, batch_size, steps, vocab, num_classes, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(2, vocab, size=(batch_size * steps, *shape), dtype=np.int32)
    labels = rng.integers(0, num_classes, size=(batch_size * steps,), dtype=np.int32)
    return tf.data.Dataset.from_tensor_slices((ids, labels)).batch(batch_size).cache().repeat()


def epoch_seconds(model, data, steps):
    timer = _EpochTimer()
    model.fit(data, steps_per_epoch=steps, epochs=1, callbacks=[timer], verbose=0, shuffle=False)
    return timer.times[0]


def parse_jit(value):
    return {"auto": "auto", "true": True, "false": False}[value.lower()]


# --------------------------------------------------------------------------
# Training throughput
# --------------------------------------------------------------------------


def measure_train(name, length, args):
    shape, overrides, max_length, documents = layout(name, length, max(args.lengths),
                                                     args.sentences)
    ours, reference = build_pair(name, args.vocab, max_length, overrides, args.seed,
                                  args.ours_dtype_policy)
    recipe, jit = compile_pair(name, ours, reference, parse_jit(args.jit_compile))
    data = random_batches(shape, args.batch_size, args.steps, args.vocab, ours.num_classes,
                          args.seed)
    models = {"ours": ours, "reference": reference}
    for variant in args.variants or []:
        # Our model again under another dtype policy / XLA setting, same weights.
        policy, _, variant_jit = variant.partition(":")
        other, _ = build_pair(name, args.vocab, max_length, overrides, args.seed, policy,
                              reference=False)
        other.set_weights(ours.get_weights())
        other.compile(optimizer=recipe.make_optimizer(), loss=ours.loss,
                      jit_compile=parse_jit(variant_jit or "auto"))
        models[f"ours[{policy}:{bool(other.jit_compile)}]"] = other
    failed = {}
    for impl, model in list(models.items()):
        try:
            epoch_seconds(model, data, args.steps)  # warm-up: tracing, compilation
        except Exception as error:  # noqa: BLE001 - a variant that cannot train is reported
            if impl in IMPLEMENTATIONS:
                raise
            failed[impl] = f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"
            del models[impl]
    seconds = {impl: [] for impl in models}
    for _ in range(args.repeats):
        for impl in models:
            seconds[impl].append(epoch_seconds(models[impl], data, args.steps))
    examples = args.steps * args.batch_size
    eps = {impl: examples / statistics.median(seconds[impl]) for impl in models}
    record = {
        "benchmark": "reference_ratio",
        "model": name,
        "family": ours.family,
        "sequence_length": length,
        "input_shape": list(shape),
        "batch_size": args.batch_size,
        "steps": args.steps,
        "repeats": args.repeats,
        "ours_eps": round(eps["ours"], 1),
        "reference_eps": round(eps["reference"], 1),
        "ratio": round(eps["ours"] / eps["reference"], 3),
        "ratio_of": "examples_per_second",
        "ours_eps_range": [round(examples / max(seconds["ours"]), 1),
                           round(examples / min(seconds["ours"]), 1)],
        "reference_eps_range": [round(examples / max(seconds["reference"]), 1),
                                round(examples / min(seconds["reference"]), 1)],
        "optimizer": recipe.optimizer,
        "jit_compile": jit,
        "ours_dtype_policy": args.ours_dtype_policy,
    }
    for impl in models:
        if impl.startswith("ours["):
            record.setdefault("variants", {})[impl] = {
                "eps": round(eps[impl], 1), "ratio": round(eps[impl] / eps["reference"], 3)}
    for impl, error in failed.items():
        record.setdefault("variants", {})[impl] = {"error": error}
    if documents:
        record["unit"] = "document"
        record["ours_ms_per_document"] = round(1000.0 / eps["ours"], 2)
        record["reference_ms_per_document"] = round(1000.0 / eps["reference"], 2)
    return record


# --------------------------------------------------------------------------
# Peak memory, one subprocess per (model, implementation, length)
# --------------------------------------------------------------------------


def memory_child(args):
    """In the subprocess: build both, keep ``args.child_impl``, train, report."""
    name, length = args.child_model, args.child_length
    shape, overrides, max_length, _ = layout(name, length, args.child_max_length,
                                             args.sentences)
    ours, reference = build_pair(name, args.vocab, max_length, overrides, args.seed,
                                  args.ours_dtype_policy)
    recipe, jit = compile_pair(name, ours, reference, parse_jit(args.child_jit))
    model = ours if args.child_impl == "ours" else reference
    num_classes = ours.num_classes
    del ours, reference  # the model kept stays referenced by ``model``
    gc.collect()
    data = random_batches(shape, args.batch_size, args.steps, args.vocab, num_classes, args.seed)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    seconds = epoch_seconds(model, data, args.steps)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("RESULT:" + json.dumps({"peak_rss_mb": round(peak), "rss_before_training_mb": round(before),
                                  "epoch_s": round(seconds, 3), "jit_compile": jit}), flush=True)
    return 0


def measure_memory(name, length, args, jit):
    record = {"benchmark": "reference_memory", "model": name, "sequence_length": length,
              "batch_size": args.batch_size, "steps": args.steps, "ratio_of": "peak_rss_mb"}
    for impl in IMPLEMENTATIONS:
        command = [sys.executable, os.path.abspath(__file__), "--child", impl,
                   "--child-model", name, "--child-length", str(length),
                   "--child-max-length", str(max(args.lengths)), "--child-jit", str(jit),
                   "--batch-size", str(args.batch_size), "--steps", str(args.steps),
                   "--vocab", str(args.vocab), "--seed", str(args.seed),
                   "--ours-dtype-policy", args.ours_dtype_policy]
        if args.sentences:
            command += ["--sentences", str(args.sentences)]
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
            if "RESULT:" in proc.stdout:
                result = json.loads(proc.stdout.split("RESULT:")[-1])
                record[f"{impl}_peak_rss_mb"] = result["peak_rss_mb"]
                record[f"{impl}_rss_before_training_mb"] = result["rss_before_training_mb"]
                record["jit_compile"] = result["jit_compile"]
            else:
                died = (f"killed by signal {-proc.returncode} (out of memory?)"
                        if proc.returncode < 0 else f"exit {proc.returncode}")
                tail = (proc.stderr.strip().splitlines() or [""])[-1][-300:]
                record[f"{impl}_error"] = f"{died}: {tail}" if tail else died
        except subprocess.TimeoutExpired:
            record[f"{impl}_error"] = f"over {args.timeout} s"
    if "ours_peak_rss_mb" in record and "reference_peak_rss_mb" in record:
        record["ratio"] = round(record["ours_peak_rss_mb"] / record["reference_peak_rss_mb"], 3)
    else:
        record["error"] = "; ".join(f"{impl}: {record[f'{impl}_error']}"
                                    for impl in IMPLEMENTATIONS if f"{impl}_error" in record)
    return record


# --------------------------------------------------------------------------
# Exported inference latency
# --------------------------------------------------------------------------


def export_and_load(model, rank, directory):
    """Token ids in, logits out, as one ``tf.function`` endpoint; reloaded."""
    archive = keras.export.ExportArchive()
    archive.add_endpoint(
        name="serve",
        fn=lambda ids: model(ids, training=False),
        input_signature=[tf.TensorSpec(shape=[None] * (rank + 1), dtype=tf.int32,
                                       name="token_ids")],
    )
    archive.write_out(directory, verbose=False)
    return tf.saved_model.load(directory)  # keep the object: its variables live with it


def measure_latency(name, length, args):
    shape, overrides, max_length, _ = layout(name, length, max(args.lengths), args.sentences)
    ours, reference = build_pair(name, args.vocab, max_length, overrides, args.seed,
                                  args.ours_dtype_policy)
    rng = np.random.default_rng(args.seed)
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        loaded = {
            "ours": export_and_load(merged_embedding_model(ours), len(shape),
                                   os.path.join(tmp, "ours")),
            "reference": export_and_load(reference, len(shape), os.path.join(tmp, "reference")),
        }
        functions = {impl: loaded[impl].serve for impl in IMPLEMENTATIONS}
        for batch in args.latency_batches:
            ids = tf.constant(rng.integers(2, args.vocab, size=(batch, *shape), dtype=np.int32))
            expected = functions["ours"](ids).numpy()
            got = functions["reference"](ids).numpy()
            for _ in range(3):  # warm-up
                for impl in IMPLEMENTATIONS:
                    functions[impl](ids).numpy()
            samples = {impl: [] for impl in IMPLEMENTATIONS}
            for _ in range(args.calls):
                for impl in IMPLEMENTATIONS:
                    start = time.perf_counter()
                    functions[impl](ids).numpy()
                    samples[impl].append(time.perf_counter() - start)
            ms = {impl: 1000 * statistics.median(samples[impl]) for impl in IMPLEMENTATIONS}
            records.append({
                "benchmark": "reference_latency",
                "model": name,
                "sequence_length": length,
                "input_shape": list(shape),
                "batch_size": batch,
                "calls": args.calls,
                "ours_ms": round(ms["ours"], 3),
                "reference_ms": round(ms["reference"], 3),
                "ratio": round(ms["ours"] / ms["reference"], 3),
                "ratio_of": "median_ms",
                "max_abs_logit_difference": float(np.max(np.abs(expected - got))),
            })
    return records


# --------------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pattern", nargs="+", default=["*"], help="zoo models (fnmatch)")
    parser.add_argument("--lengths", type=int, nargs="+", default=[50, 200, 1000])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--vocab", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sentences", type=int,
                        help="documents of this many sentences of `length` words (hierarchical "
                             "models; flat models read them as one sequence)")
    parser.add_argument("--jit-compile", default="auto", choices=("auto", "true", "false"),
                        type=str.lower)
    parser.add_argument("--ours-dtype-policy", default="float32",
                        help="dtype policy of our model (the reference stays float32), e.g. "
                             "mixed_bfloat16")
    parser.add_argument("--variants", nargs="+", metavar="POLICY[:JIT]",
                        help="also time our model under these dtype policies / jit settings "
                             "(e.g. mixed_bfloat16 float32:true), same weights, alternating")
    parser.add_argument("--no-train", action="store_true", help="skip the throughput ratios")
    parser.add_argument("--memory", action="store_true",
                        help="peak memory per (model, implementation, length), in subprocesses")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per memory subprocess")
    parser.add_argument("--latency", action="store_true", help="exported inference latency")
    parser.add_argument("--latency-batches", type=int, nargs="+", default=[1, 64])
    parser.add_argument("--calls", type=int, default=30, help="timed calls per latency point")
    # The memory subprocess's own arguments.
    parser.add_argument("--child", choices=IMPLEMENTATIONS, dest="child_impl",
                        help=argparse.SUPPRESS)
    parser.add_argument("--child-model", help=argparse.SUPPRESS)
    parser.add_argument("--child-length", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--child-max-length", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--child-jit", default="auto", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_impl:
        return memory_child(args)

    env = environment()
    names = sorted({n for pattern in args.pattern for n in zoo.list_models(pattern)})
    if not names:
        print(json.dumps({"benchmark": "reference_ratio", "error": f"no model matches "
                                                                   f"{args.pattern}", **env}))
        return 1
    for name in names:
        for length in args.lengths:
            base = {"model": name, "sequence_length": length}
            jit = None
            if not args.no_train:
                try:
                    record = measure_train(name, length, args)
                    jit = record["jit_compile"]
                except Exception as error:  # noqa: BLE001 - reported, and the script goes on
                    record = {"benchmark": "reference_ratio", **base,
                              "error": f"{type(error).__name__}: {str(error)[:300]}"}
                print(json.dumps({**record, **env}), flush=True)
                keras.backend.clear_session()
                gc.collect()
            if args.memory:
                jit = args.jit_compile if jit is None else jit  # the subprocess resolves "auto"
                print(json.dumps({**measure_memory(name, length, args, jit), **env}), flush=True)
            if args.latency:
                try:
                    records = measure_latency(name, length, args)
                except Exception as error:  # noqa: BLE001
                    records = [{"benchmark": "reference_latency", **base,
                                "error": f"{type(error).__name__}: {str(error)[:300]}"}]
                for record in records:
                    print(json.dumps({**record, **env}), flush=True)
                keras.backend.clear_session()
                gc.collect()
    return 0


if __name__ == "__main__":
    sys.exit(main())
