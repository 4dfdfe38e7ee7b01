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
