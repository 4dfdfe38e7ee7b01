"""Where a training step's time goes: the TensorFlow profiler, summarised by layer.

Builds a zoo model at its paper settings (as ``bench_training.py``: 5 classes,
a ``--vocab``-word vocabulary, random token ids of exactly ``--length``
tokens, batch ``--batch-size``, the recipe's optimizer), warms it up, then
records ``--steps`` training steps with ``tf.profiler.experimental`` into
``--logdir`` (open it with ``tensorboard --logdir LOGDIR`` and the
``tensorboard-plugin-profile`` package for the trace viewer), and reads the
trace back: the time of every TensorFlow op, attributed to the Keras layer
whose name scope it ran in (forward and gradient separately) and to its op
type. Prints one JSON line per layer, one per op type and a total.

The step runs without XLA (``jit_compile=False``) so that every op keeps its
layer's name; under XLA the same work is fused into clusters that no longer
say which layer they came from. Op times are wall times on the executor's
threads; ops that overlap on the two inter-op threads are each counted, so
the shares are of the summed op time.

    python benchmarks/profile_step.py mpsan --length 200 --steps 5
    python benchmarks/profile_step.py cspan --length 200 --top 12
    python benchmarks/profile_step.py han --length 24 --sentences 12
"""

import argparse
import collections
import glob
import json
import os
import re
import sys
import tempfile

from keras_posattn.cli import quiet_tensorflow  # noqa: E402

quiet_tensorflow()

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_posattn import zoo  # noqa: E402
from keras_posattn.training.recipe import Recipe  # noqa: E402

#: Function-call ops whose time is the sum of the ops they run (not counted).
_CONTAINERS = {"StatefulPartitionedCall", "PartitionedCall", "While", "If", "StatelessWhile",
               "StatelessIf", "_XlaRun", "XlaLaunch", "_XlaCompile", "IteratorGetNext"}


def build(name, length, batch_size, vocab, sentences=None, seed=0, reference=False):
    keras.utils.set_random_seed(seed)
    family = zoo.families()[zoo.get_preset(name)["family"]]
    overrides, shape, max_length = {}, (length,), length
    if family.preprocessor_cls.input_rank == 2:
        overrides["max_sentences"] = sentences
        shape = (sentences, length)
    elif sentences:
        shape = (sentences * length,)
        max_length = sentences * length
    model = zoo.build(name, vocabulary_size=vocab, max_length=max_length, **overrides)
    if reference:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from keras_posattn_reference import build_reference

        num_classes = model.num_classes
        model = build_reference(model)
        model.num_classes = num_classes
    recipe = Recipe.from_dict(zoo.get_preset(name).get("recipe", {}))
    model.compile(optimizer=recipe.make_optimizer(), jit_compile=False,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(seed)
    x = rng.integers(2, vocab, size=(batch_size, *shape), dtype=np.int32)
    y = rng.integers(0, model.num_classes, size=(batch_size,), dtype=np.int32)
    data = tf.data.Dataset.from_tensors((x, y)).repeat().prefetch(2)
    return model, data


def op_events(logdir):
    """(op name, op type, microseconds) of every op the trace holds."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    files = glob.glob(f"{logdir}/**/*.xplane.pb", recursive=True)
    if not files:
        raise SystemExit(f"no profile was written under {logdir}")
    space = xplane_pb2.XSpace()
    with open(sorted(files)[-1], "rb") as f:
        space.ParseFromString(f.read())
    for plane in space.planes:
        if not plane.name.startswith("/host:CPU"):
            continue
        for line in plane.lines:
            for event in line.events:
                name = plane.event_metadata[event.metadata_id].name
                if ":" not in name or "::" in name:  # runtime scopes, not ops
                    continue
                op_name, _, op_type = name.rpartition(":")
                op_type = op_type.strip()
                if op_type in _CONTAINERS or not op_type or op_type.startswith("__"):
                    continue
                yield op_name, op_type, event.duration_ps / 1e6


def layer_of(op_name, model_name):
    """``(layer, phase)`` of an op from its name scope."""
    parts = [re.sub(r"_\d+$", "", p) for p in op_name.split("/")]
    backward = any(p in ("gradient_tape", "gradients") for p in parts)
    if model_name in parts:
        rest = parts[parts.index(model_name) + 1:]
        layer = rest[0] if len(rest) > 1 else "(model)"
        return layer, "backward" if backward else "forward"
    lowered = [p.lower() for p in parts]
    for p in lowered:
        if p in ("adam", "adadelta", "adamw", "sgd", "rmsprop") or p.startswith("optimizer"):
            return "(optimizer)", "update"
    if any("loss" in p or "compile_loss" in p for p in lowered):
        return "(loss)", "backward" if backward else "forward"
    return "(other)", "backward" if backward else "forward"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model")
    parser.add_argument("--length", type=int, default=200)
    parser.add_argument("--sentences", type=int)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--vocab", type=int, default=20000)
    parser.add_argument("--logdir", help="where the trace goes (default: a temporary folder)")
    parser.add_argument("--top", type=int, default=20, help="op types printed")
    parser.add_argument("--reference", action="store_true",
                        help="profile the stock-Keras reference build instead "
                             "(benchmarks/keras_posattn_reference/)")
    args = parser.parse_args()
    logdir = args.logdir or tempfile.mkdtemp(prefix="profile_")
    model, data = build(args.model, args.length, args.batch_size, args.vocab, args.sentences,
                        reference=args.reference)
    model.fit(data, steps_per_epoch=3, epochs=1, verbose=0)  # trace and warm up
    tf.profiler.experimental.start(logdir)
    model.fit(data, steps_per_epoch=args.steps, epochs=1, verbose=0)
    tf.profiler.experimental.stop()

    by_layer = collections.defaultdict(float)
    by_type = collections.defaultdict(float)
    total = 0.0
    for op_name, op_type, micros in op_events(logdir):
        layer, phase = layer_of(op_name, model.name)
        by_layer[(layer, phase)] += micros
        by_type[op_type] += micros
        total += micros
    per_step = 1000.0 * args.steps  # microseconds -> ms per step
    common = {"model": args.model, "reference": args.reference, "sequence_length": args.length,
              "batch_size": args.batch_size, "sentences": args.sentences, "jit_compile": False}
    layers = collections.defaultdict(dict)
    for (layer, phase), micros in by_layer.items():
        layers[layer][phase] = micros
    for layer, phases in sorted(layers.items(), key=lambda kv: -sum(kv[1].values())):
        micros = sum(phases.values())
        print(json.dumps({"benchmark": "profile_layer", **common, "layer": layer,
                          "ms_per_step": round(micros / per_step, 2),
                          "share": round(micros / total, 4),
                          **{f"{p}_ms": round(v / per_step, 2) for p, v in phases.items()}}))
    for op_type, micros in sorted(by_type.items(), key=lambda kv: -kv[1])[: args.top]:
        print(json.dumps({"benchmark": "profile_op_type", **common, "op_type": op_type,
                          "ms_per_step": round(micros / per_step, 2),
                          "share": round(micros / total, 4)}))
    print(json.dumps({"benchmark": "profile_total", **common, "logdir": logdir,
                      "op_ms_per_step": round(total / per_step, 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
