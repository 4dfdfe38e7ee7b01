"""Small helpers shared by the CLI, benchmarks and tests."""

import weakref

import numpy as np


def count_parameters(model, exclude_embedding=True):
    """Number of trainable parameters of a zoo model, optionally without its
    word embedding.

    Papers report sizes "without embeddings" (MPSAN's 1.09M); the embedding's
    size depends on the vocabulary, not the architecture. The embedding is
    the contract's ``model.embedding``.
    """
    skip = set()
    if exclude_embedding:
        skip = {id(w) for w in model.embedding.weights}
    return int(sum(np.prod(w.shape) for w in model.trainable_weights if id(w) not in skip))


#: CPU flags of native bfloat16 arithmetic (Intel AMX; AVX-512 BF16 on Intel
#: Cooper Lake and later, AMD Zen 4 and later).
BFLOAT16_CPU_FLAGS = ("amx_bf16", "avx512_bf16")


def native_bfloat16(cpuinfo="/proc/cpuinfo"):
    """Why this machine computes bfloat16 natively, or None.

    A GPU of compute capability 8.0 or more (Ampere and later), or - without
    a GPU - a CPU whose flags (``/proc/cpuinfo``, Linux) include AMX-BF16 or
    AVX512-BF16. Elsewhere bfloat16 is emulated and mixed precision slows
    training down instead of speeding it up.
    """
    import re

    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        capability = tf.config.experimental.get_device_details(gpus[0]).get("compute_capability")
        if capability and capability[0] >= 8:
            return f"GPU compute capability {capability[0]}.{capability[1]}"
        return None
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    for flag in BFLOAT16_CPU_FLAGS:
        if re.search(rf"\b{flag}\b", text):
            return f"CPU flag {flag}"
    return None


#: How much faster (float32 time / bfloat16 time) the probe step must run in
#: bfloat16 for a recipe's ``mixed_bfloat16 = "auto"`` to choose it on a CPU.
BFLOAT16_MIN_SPEEDUP = 1.1

#: Speed-ups measured in this process, by machine key.
_SPEEDUPS = {}


def _probe_seconds(dtype, repeats=5):
    """Best time of two training-like steps (a 3-wide convolution over
    32 x 256 x 128 and a 128 x 128 matmul, forward and gradient, float32
    weights cast to ``dtype`` as Keras' mixed precision casts them)."""
    import time

    import tensorflow as tf

    generator = tf.random.Generator.from_seed(0)
    x = generator.normal((32, 256, 128))
    w1 = tf.Variable(generator.normal((3, 128, 128)) * 0.05)
    w2 = tf.Variable(generator.normal((128, 128)) * 0.05)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            h = tf.nn.relu(tf.nn.conv1d(tf.cast(x, dtype), tf.cast(w1, dtype), 1, "SAME"))
            y = tf.matmul(tf.reshape(h, (-1, 128)), tf.cast(w2, dtype))
            loss = tf.reduce_sum(tf.square(tf.cast(y, tf.float32)))
        return tape.gradient(loss, [w1, w2])

    step()  # trace
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        step()
        best = min(best, time.perf_counter() - start)
    return best


def measure_bfloat16_speedup(rounds=3):
    """float32 time / bfloat16 time of the probe step on this machine's CPU
    (median of ``rounds`` alternating measurements, about a second each).

    Native bfloat16 flags do not say that bfloat16 is faster: on one 2-core
    AVX512-BF16 machine mixed_bfloat16 trained DPCNN at 1.36x float32's speed,
    on another (an Intel Xeon with AVX512-BF16, no AMX) at 0.69x
    (BENCHMARKS.md, "Is bfloat16 faster here? Measured, not read off the
    flags")."""
    import statistics

    import tensorflow as tf

    ratios = []
    for _ in range(rounds):
        ratios.append(_probe_seconds(tf.float32) / _probe_seconds(tf.bfloat16))
    return statistics.median(ratios)


def cache_root():
    """``$KERAS_POSATTN_CACHE``, else ``~/.cache/keras_posattn``
    (``$XDG_CACHE_HOME`` instead of ``~/.cache`` where set)."""
    import os
    from pathlib import Path

    root = os.environ.get("KERAS_POSATTN_CACHE")
    if root:
        return Path(root).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "keras_posattn"


def _speedup_cache_path():
    return cache_root() / "bfloat16_speedup.json"


def _machine_key(cpuinfo="/proc/cpuinfo"):
    """The machine (CPU model, cores, GPUs), its CPU flags and TensorFlow's
    version: what decides the probe's answer."""
    import hashlib
    import re

    import tensorflow as tf

    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            flags = re.search(r"^flags\s*:(.*)$", f.read(), re.MULTILINE)
        flags = " ".join(sorted(flags.group(1).split())) if flags else ""
    except OSError:
        flags = ""
    digest = hashlib.sha256(flags.encode()).hexdigest()[:12]
    return f"{machine(cpuinfo)} | flags {digest} | tensorflow {tf.__version__}"


def bfloat16_speedup(cpuinfo="/proc/cpuinfo"):
    """``measure_bfloat16_speedup()`` once per machine: the answer is kept in
    ``$KERAS_POSATTN_CACHE/bfloat16_speedup.json`` (else
    ``~/.cache/keras_posattn/``) under the machine's key, so every run and
    every seed of a row on one machine makes the same choice (delete the file
    to measure again). An unwritable cache only costs the next run a probe."""
    import json
    import os

    key = _machine_key(cpuinfo)
    if key in _SPEEDUPS:
        return _SPEEDUPS[key]
    path = _speedup_cache_path()
    try:
        known = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(known, dict):
            known = {}
    except (OSError, ValueError):
        known = {}
    value = known.get(key)
    if not isinstance(value, (int, float)) or not value > 0:
        value = float(measure_bfloat16_speedup())
        known[key] = value
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # workers race
            tmp.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n", encoding="utf-8")
            tmp.replace(path)
        except OSError:
            pass
    _SPEEDUPS[key] = float(value)
    return float(value)


def machine(cpuinfo="/proc/cpuinfo"):
    """The machine a run trains on, in a few words: its CPU's model name
    (``/proc/cpuinfo``, Linux; else ``platform.processor()``), its cores, and
    its GPUs. Results of the same seed differ between machines (floating-point
    kernels, and recipes whose mixed precision is ``"auto"``), so a record
    names the machine."""
    import os
    import platform

    import tensorflow as tf

    model = None
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and value.strip():
                    model = value.strip()
                    break
    except OSError:
        pass
    out = f"{model or platform.processor() or platform.machine() or 'unknown CPU'}, " \
          f"{os.cpu_count()} cores"
    gpus = tf.config.list_physical_devices("GPU")
    names = [tf.config.experimental.get_device_details(g).get("device_name", g.name)
             for g in gpus]
    return out + ("; " + ", ".join(names) if names else "")


def process_alive(pid):
    """Whether process ``pid`` runs on this machine (a process of another
    user counts: it exists)."""
    import os

    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OverflowError, ValueError):
        return False
    return True


#: Each Bidirectional wrapper made by ``bidirectional`` -> the layer it wraps.
_WRAPPED = weakref.WeakKeyDictionary()


def bidirectional(layer, **kwargs):
    """``keras.layers.Bidirectional(layer, **kwargs)``, safe to build while
    ``keras.saving.load_model`` runs.

    Keras's ``Bidirectional`` serializes ``layer`` and deserializes it into
    its forward and backward copies in its constructor. Inside
    ``load_model``'s object-sharing scope objects are matched by ``id()``:
    once the temporary ``layer`` of one wrapper is freed, the next wrapper's
    temporary may get the same address, and the scope then hands it the first
    wrapper's copy (measured: "Forward layer and backward layer should have
    different `go_backwards` value" loading an EPN, in one full test run of
    several, and about one wrapper in a hundred made in a loop). Keeping each
    wrapped layer alive as long as its wrapper keeps the ids distinct.
    """
    import keras

    wrapper = keras.layers.Bidirectional(layer, **kwargs)
    _WRAPPED[wrapper] = layer
    return wrapper
