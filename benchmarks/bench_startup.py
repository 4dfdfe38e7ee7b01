"""Start-up cost of training and exporting: the seconds before the first
useful step, which is tracing on the TensorFlow backend.

Prints one JSON line per zoo model: the seconds of ``fit`` for one epoch of
``--rows`` random token-id rows (batch 32, length ``--length``; so small that
the epoch is almost all tracing), the number of times the training step was
traced, and the seconds of ``keras_posattn.export.export_saved_model`` for
the trained model behind its family's preprocessor. Models are built at their
paper settings with a ``--vocab``-word vocabulary. A warm-up model runs first
and is not printed (TensorFlow's first-use costs).

    python benchmarks/bench_startup.py --models mpsan cspan epn hcan_flat dpcnn
    # the code before a change, with this script:
    PYTHONPATH=<worktree> python benchmarks/bench_startup.py ...
"""

import argparse
import json
import os
import sys
import tempfile
import time

from keras_posattn.cli import quiet_tensorflow  # noqa: E402

quiet_tensorflow()

import keras  # noqa: E402
import numpy as np  # noqa: E402

import keras_posattn  # noqa: E402
from keras_posattn import export  # noqa: E402
from keras_posattn import zoo  # noqa: E402
from keras_posattn.models import TextClassifier  # noqa: E402


def measure(name, args):
    keras.utils.set_random_seed(0)
    words = [f"w{i}" for i in range(args.vocab)]
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(words, size=args.length)) for _ in range(args.rows)]
    family = zoo.families()[zoo.get_preset(name)["family"]]
    preprocessor = family.preprocessor_cls.from_texts(texts)  # documents: one sentence each
    model = zoo.build(name, num_classes=2, vocabulary_size=preprocessor.vocabulary_size)
    ids = keras.ops.convert_to_numpy(preprocessor(texts)).astype("int32")
    labels = np.arange(args.rows) % 2
    traces = []
    step = type(model).train_step

    def counted(self, batch):
        traces.append(1)
        return step(self, batch)

    type(model).train_step = counted
    try:
        model.compile()
        start = time.perf_counter()
        model.fit(ids, labels, batch_size=32, epochs=1, verbose=0)
        fit_s = time.perf_counter() - start
    finally:
        type(model).train_step = step
    classifier = TextClassifier(preprocessor, model, label_names=["a", "b"])
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        export.export_saved_model(classifier, name="m", base_dir=folder, warmup=False)
        export_s = time.perf_counter() - start
    return {"model": name, "fit_one_epoch_s": round(fit_s, 2), "train_step_traces": len(traces),
            "export_s": round(export_s, 2), "rows": args.rows, "length": args.length,
            "keras_posattn": os.path.dirname(keras_posattn.__file__)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=["mpsan", "cspan", "epn", "hcan_flat"])
    parser.add_argument("--rows", type=int, default=64)
    parser.add_argument("--length", type=int, default=40)
    parser.add_argument("--vocab", type=int, default=2000)
    args = parser.parse_args(argv)
    measure("kim_cnn_static", args)  # warm-up, not printed
    for name in args.models:
        print(json.dumps(measure(name, args)), flush=True)


if __name__ == "__main__":
    sys.exit(main())
