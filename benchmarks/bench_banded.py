"""Banded against dense attention for Faraway masks, as the length grows.

Prints one JSON line per (scope, implementation, length): the median time of
a training step (forward and backward) and the process's peak resident
memory. Each measurement runs in a fresh subprocess so that peak memory
belongs to it alone; a run that fails (e.g. out of memory) is recorded with
its error.

Scopes:

- ``layer``: one ``MaskedSelfAttention(mask=Faraway(3))`` with MPSAN's 1-D
  additive compatibility, d = 300 (one of MPSAN's two Faraway branches);
- ``mpsan``: the whole ``mpsan`` model at paper settings (d = 300), whose
  FA(2) and FA(3) branches go banded with ``implementation="auto"`` while its
  BW+SD and FW+SD branches stay (n, n).

    python benchmarks/bench_banded.py --scope layer --lengths 256 1024 4096 --batch-size 8
    python benchmarks/bench_banded.py --scope mpsan --lengths 256 1024 4096 --batch-size 4
"""

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, resource, statistics, sys, time
from keras_posattn.cli import quiet_tensorflow
quiet_tensorflow()
import keras, numpy as np, tensorflow as tf
from keras_posattn import masks, zoo
from keras_posattn.layers import MaskedSelfAttention

scope, implementation, n, batch, repeats, limit_gb = (
    sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]),
    float(sys.argv[6]))
if limit_gb > 0:
    # Allocations past the limit fail inside this process (an error, not the
    # kernel's OOM killer picking some other process of the machine).
    limit = int(limit_gb * 2 ** 30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
if scope == "layer":
    layer = MaskedSelfAttention(mask=masks.Faraway(3), compatibility="additive",
                                activation="elu", implementation=implementation)
    x = tf.constant(rng.normal(size=(batch, n, 300)).astype("float32"))
    padding = tf.ones((batch, n), bool)
    layer(x, mask=padding)
    variables = layer.trainable_variables
    def loss_fn():
        return tf.reduce_sum(layer(x, mask=padding))
else:
    model = zoo.build("mpsan", max_length=n, vocabulary_size=20000)
    if implementation == "dense":
        for l in model.layers:
            if isinstance(l, MaskedSelfAttention):
                l._band = None  # the dense path, as implementation="dense" builds it
    ids = tf.constant(rng.integers(2, 20000, size=(batch, n)).astype("int32"))
    labels = tf.constant(rng.integers(0, 5, size=(batch,)).astype("int32"))
    variables = model.trainable_variables
    ce = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    def loss_fn():
        return ce(labels, model(ids, training=True))

@tf.function
def step():
    with tf.GradientTape() as tape:
        loss = loss_fn()
    return tape.gradient(loss, variables)

step()  # trace
times = []
for _ in range(repeats):
    start = time.perf_counter()
    grads = step()
    _ = [tf.convert_to_tensor(g).numpy() for g in grads if g is not None]
    times.append(time.perf_counter() - start)
print("RESULT:" + json.dumps({"step_ms": round(1000 * statistics.median(times), 1),
                              "min_ms": round(1000 * min(times), 1),
                              "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scope", choices=("layer", "mpsan"), default="layer")
    parser.add_argument("--lengths", type=int, nargs="+", default=[256, 1024, 4096])
    parser.add_argument("--batch-size", "--batch-sizes", dest="batch_sizes", type=int,
                        nargs="+", default=[8])
    parser.add_argument("--address-space-gb", type=float, default=0,
                        help="cap each measuring process's address space (RLIMIT_AS) so that "
                             "a length that does not fit fails there; TensorFlow alone maps "
                             "~2-3 GB of it")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--implementations", nargs="+", default=["banded", "dense"])
    parser.add_argument("--timeout", type=int, default=900)
    args = parser.parse_args()
    for n, batch_size, implementation in [(n, b, i) for n in args.lengths
                                          for b in args.batch_sizes
                                          for i in args.implementations]:
        record = {"benchmark": "banded_vs_dense", "scope": args.scope,
                  "implementation": implementation, "length": n,
                  "batch_size": batch_size, "address_space_gb": args.address_space_gb}
        impl = "auto" if (args.scope == "mpsan" and implementation == "banded") else implementation
        try:
            proc = subprocess.run(
                [sys.executable, "-c", CHILD, args.scope, impl, str(n),
                 str(batch_size), str(args.repeats), str(args.address_space_gb)],
                capture_output=True, text=True, timeout=args.timeout)
            if "RESULT:" in proc.stdout:
                record.update(json.loads(proc.stdout.split("RESULT:")[-1]))
            else:
                record["error"] = (f"exit {proc.returncode}: "
                                   + (proc.stderr.strip().splitlines() or ["killed"])[-1][-300:])
        except subprocess.TimeoutExpired:
            record["error"] = f"over {args.timeout} s"
        print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
