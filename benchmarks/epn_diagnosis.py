"""Why does a deep EPN not learn on IMDB? Signal, gradients and accuracy
through the pyramid, by depth and training setting.

    .venv/bin/python benchmarks/epn_diagnosis.py --data-dir ../shared/datasets \\
        --configs blocks=1 blocks=3 blocks=5 blocks=7 --seeds 1 2 --epochs 3 > epn.jsonl
    .venv/bin/python benchmarks/epn_diagnosis.py --table epn.jsonl

A config is ``key=value`` pairs joined by commas. Training keys: ``lr``
(Adam's learning rate, default 1e-3), ``batch`` (default 32), ``warmup``
(steps of a linear learning-rate warm-up from 0; default 0), ``clipnorm``
(default none), ``epochs``; every other key is an ``EPN`` constructor
argument (``blocks`` is ``num_blocks``; ``shortcuts`` joins its names with
``+``), e.g. ``blocks=7,lr=3e-4,warmup=300`` or
``blocks=7,shortcuts=bilstm+attention,block_norm=true``.
``model=shallow_cnn`` (any zoo preset; its constructor arguments as the
other keys) trains that model on the same data instead, for comparison:
accuracy only, no measurements.

Data: a seeded sample of ``--train`` IMDB training reviews (default 5,000)
and ``--dev`` reviews of the dev split (default 2,000; the test split is
never read), the first ``--max-length`` tokens (default 512, the 93rd
percentile of the sample's lengths), the top 30,000 words of the sample,
GloVe 6B 50d, every embedding row trained, no embedding dropout or L2 (the
50d recipe's model settings), Adam with epsilon 1e-8, batches bucketed by
length as the trainer does.

Measured, on ``--probe`` dev reviews (default 64, the same for every run),
with dropout off, at initialisation, after ``--early-steps`` training steps
and after every epoch:

- per stage (the region embedding; each block's pooling, Bi-LSTM, attention
  and convolutional block, shortcuts included, and its LayerNorm with
  ``block_norm``): ``rms``, the root mean
  square of the real positions' features; ``pos``, the spread of a feature
  between the positions of one review (std over positions, averaged over
  features and reviews); ``doc``, the spread between reviews of the
  review's mean feature (std over reviews, averaged over features) and
  ``docmax`` the same for the review's max feature (what a global max pool
  there would give the classifier);
- per block: ``attn_entropy``, the attention's entropy over the real keys
  divided by log(keys) (1 = uniform: the attention then returns the mean of
  its values at every position);
- gradient norms of the loss on the probe reviews for each group of
  weights (the embedding, the region embedding, each block's Bi-LSTM,
  attention and convolutions, the classifier), and the same divided by the
  weights' norm.

One JSON line per measurement (``"event": "stats"``) and per epoch
(``"event": "epoch"``: training and dev accuracy and loss). ``--table``
prints markdown tables from such a file.
"""

import argparse
import json
import math
import sys
import time

from keras_posattn.cli import quiet_tensorflow

quiet_tensorflow()

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_posattn import zoo  # noqa: E402
from keras_posattn.datasets import load_dataset  # noqa: E402
from keras_posattn.preprocessing import TextPreprocessor  # noqa: E402
from keras_posattn.word_vectors import build_embedding_matrix  # noqa: E402
from keras_posattn.word_vectors import load_word_vectors  # noqa: E402

TRAINING_KEYS = {"lr": 1e-3, "batch": 32, "warmup": 0, "clipnorm": None, "epochs": None,
                 "model": "epn"}
ALIASES = {"blocks": "num_blocks"}
MODEL_DEFAULTS = {"epn": {"dropout": 0.0, "embedding_l2": 0.0, "num_blocks": 7}}


def parse_value(text):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"true": True, "false": False, "none": None}.get(text.lower(), text)


def parse_config(spec):
    training, model = dict(TRAINING_KEYS), {}
    for pair in filter(None, spec.split(",")):
        key, value = pair.split("=", 1)
        key = ALIASES.get(key.strip(), key.strip())
        value = parse_value(value.strip())
        if key == "shortcuts":  # shortcuts=bilstm+attention
            value = [name for name in str(value).split("+") if name and name != "none"]
        (training if key in TRAINING_KEYS else model)[key] = value
    return training, {**MODEL_DEFAULTS.get(training["model"], {}), **model}


@keras.saving.register_keras_serializable(package="epn_diagnosis")
class LinearWarmup(keras.optimizers.schedules.LearningRateSchedule):
    """``rate * min(1, (step + 1) / warmup)``: linear warm-up, then constant."""

    def __init__(self, rate, warmup):
        self.rate, self.warmup = float(rate), int(warmup)

    def __call__(self, step):
        fraction = (tf.cast(step, "float32") + 1.0) / float(max(self.warmup, 1))
        return self.rate * tf.minimum(1.0, fraction)

    def get_config(self):
        return {"rate": self.rate, "warmup": self.warmup}


# --- data -----------------------------------------------------------------------


def prepare(args):
    splits = load_dataset("imdb", args.data_dir)
    rng = np.random.default_rng(args.data_seed)
    train = rng.permutation(len(splits.train.texts))[: args.train]
    dev = rng.permutation(len(splits.dev.texts))[: args.dev]
    texts = [splits.train.texts[i] for i in train]
    pre = TextPreprocessor.from_texts(texts, max_length=args.max_length, max_tokens=30002)
    vectors = build_embedding_matrix(pre.vocabulary, load_word_vectors("glove-6b-50d"),
                                     seed=args.data_seed)
    dev_texts = [splits.dev.texts[i] for i in dev]
    data = {
        "pre": pre, "vectors": vectors,
        "train": (texts, splits.train.labels[train]),
        "dev": (dev_texts, splits.dev.labels[dev]),
    }
    probe_ids = pre(dev_texts[: args.probe]).numpy()
    data["probe"] = (probe_ids, splits.dev.labels[dev][: args.probe])
    return data


# --- measurements -----------------------------------------------------------------


def feature_stats(x, mask):
    """rms, pos, doc, docmax of a (b, n, d) tensor over its real positions."""
    x = np.asarray(keras.ops.convert_to_numpy(x), dtype="float64")
    mask = np.asarray(keras.ops.convert_to_numpy(mask), dtype=bool)
    m = mask[..., None]
    count = mask.sum(axis=1)
    rms = math.sqrt(float((x ** 2 * m).sum() / max(m.sum() * x.shape[-1], 1)))
    mean = (x * m).sum(axis=1) / np.maximum(count, 1)[:, None]
    var = ((x - mean[:, None]) ** 2 * m).sum(axis=1) / np.maximum(count, 1)[:, None]
    several = count > 1
    pos = float(np.sqrt(var[several]).mean()) if several.any() else 0.0
    doc = float(mean.std(axis=0).mean())
    top = np.where(m, x, -np.inf).max(axis=1)
    docmax = float(top.std(axis=0).mean())
    return {"rms": rms, "pos": pos, "doc": doc, "docmax": docmax}


def attention_entropy(weights, mask):
    """Mean over heads and real queries of entropy / log(real keys); NaN when
    every probe text has a single position."""
    w = np.asarray(keras.ops.convert_to_numpy(weights), dtype="float64")
    mask = np.asarray(keras.ops.convert_to_numpy(mask), dtype=bool)
    keys = mask.sum(axis=1)
    entropy = -(w * np.log(np.where(w > 0, w, 1.0))).sum(axis=-1)  # (b, h, n)
    rows = []
    for b in range(w.shape[0]):
        if keys[b] > 1:
            rows.append(entropy[b][:, mask[b]].mean() / math.log(keys[b]))
    return float(np.mean(rows)) if rows else float("nan")


def forward_stats(model, ids):
    """Per-stage feature statistics and per-block attention entropy (no dropout)."""
    layers = model._layers_by_role
    mask = ids != 0
    x = layers["regions"](layers["embedding"](ids), mask=mask)
    stats = {"regions": feature_stats(x, mask)}
    entropy = {}
    for k, block in enumerate(layers["blocks"], start=1):
        new_mask = block.compute_mask(x, mask)
        stages, weights = block.stage_outputs(x, mask=mask, training=False)
        for name, value in stages.items():
            stats[f"block{k}/{name}"] = feature_stats(value, new_mask)
        entropy[f"block{k}"] = attention_entropy(weights, new_mask)
        x, mask = list(stages.values())[-1], new_mask
    return stats, entropy


def weight_group(path):
    """The group of a weight path: embedding, multi_region, pyramid_k/<part>
    (the attention's query and key projections apart, as ``attention_qk``), head."""
    parts = path.split("/")
    for i, part in enumerate(parts):
        if part.startswith("pyramid_"):
            sub = parts[i + 1:i + 3]
            if sub[:1] == ["attention"] and sub[1:] in (["query"], ["key"]):
                return f"{part}/attention_qk"
            return f"{part}/{sub[0]}" if sub else part
        if part in ("multi_region", "token_embedding", "embedding"):
            return "multi_region" if part == "multi_region" else "embedding"
    return "head"


def gradient_stats(model, ids, labels):
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    with tf.GradientTape() as tape:
        loss = loss_fn(labels, model(ids, training=False))
    grads = tape.gradient(loss, model.trainable_weights)
    sums, weight_sums = {}, {}
    for w, g in zip(model.trainable_weights, grads):
        group = weight_group(w.path)
        if isinstance(g, tf.IndexedSlices):
            g = tf.convert_to_tensor(g)
        g = 0.0 if g is None else float(tf.reduce_sum(tf.square(g)))
        sums[group] = sums.get(group, 0.0) + g
        weight_sums[group] = weight_sums.get(group, 0.0) + float(
            np.sum(np.square(keras.ops.convert_to_numpy(w.value))))
    return {group: {"grad": math.sqrt(s), "relative": math.sqrt(s / max(weight_sums[group], 1e-30))}
            for group, s in sums.items()}, float(loss)


def measure(model, data, label, base):
    if "blocks" not in getattr(model, "_layers_by_role", {}):  # a baseline: accuracy only
        return
    ids, labels = data["probe"]
    stats, entropy = forward_stats(model, ids)
    grads, loss = gradient_stats(model, ids, labels)
    record = dict(base, event="stats", at=label, probe_loss=loss, stages=stats,
                  attn_entropy=entropy, gradients=grads)
    print(json.dumps(record), flush=True)


class Probe(keras.callbacks.Callback):
    def __init__(self, data, base, early_steps):
        super().__init__()
        self.data, self.base, self.early_steps = data, base, early_steps
        self.step = 0

    def on_train_batch_end(self, batch, logs=None):
        self.step += 1
        if self.step == self.early_steps:
            measure(self.model, self.data, f"step{self.step}", self.base)

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        print(json.dumps(dict(self.base, event="epoch", epoch=epoch + 1,
                              train_accuracy=round(float(logs["accuracy"]), 4),
                              train_loss=round(float(logs["loss"]), 4),
                              dev_accuracy=round(float(logs["val_accuracy"]), 4),
                              dev_loss=round(float(logs["val_loss"]), 4),
                              seconds=round(time.time() - self.started, 1))), flush=True)
        measure(self.model, self.data, f"epoch{epoch + 1}", self.base)

    def on_train_begin(self, logs=None):
        self.started = time.time()


def build(spec, seed, data):
    """The config's training settings and its model (EPN, or the zoo preset
    ``model=``), GloVe loaded, seeded."""
    training, model_args = parse_config(spec)
    pre, vectors = data["pre"], data["vectors"]
    keras.utils.set_random_seed(seed)
    model = zoo.build(training["model"], num_classes=2, vocabulary_size=pre.vocabulary_size,
                      max_length=pre.max_length, embedding_dim=50, **model_args)
    model.embedding.set_pretrained(vectors.matrix, vectors.pretrained)
    return training, model


def run(spec, seed, data, args):
    training, model = build(spec, seed, data)
    pre = data["pre"]
    epochs = int(training["epochs"] or args.epochs)
    rate = training["lr"]
    if training["warmup"]:
        rate = LinearWarmup(rate, training["warmup"])
    optimizer = keras.optimizers.Adam(rate, epsilon=1e-8,
                                      clipnorm=training["clipnorm"] or None)
    model.compile(optimizer=optimizer,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    base = {"config": spec, "seed": seed, "train": args.train, "dev": args.dev,
            "max_length": pre.max_length}
    measure(model, data, "init", base)
    train_ds = pre.dataset(*data["train"], training["batch"], shuffle_seed=seed)
    dev_ds = pre.dataset(*data["dev"], 100)
    model.fit(train_ds, validation_data=dev_ds, epochs=epochs, verbose=0,
              callbacks=[Probe(data, base, args.early_steps)])


# --- tables -------------------------------------------------------------------------


def print_tables(path):
    records = [json.loads(line) for line in open(path) if line.startswith("{")]
    runs = []  # one list of epoch records per run, a run starting at epoch 1
    for r in records:
        if r["event"] == "epoch":
            if r["epoch"] == 1:
                runs.append([])
            runs[-1].append(r)
    print("| config | seed | train accuracy by epoch | dev accuracy by epoch | s/epoch |")
    print("|---|---:|---|---|---:|")
    for rows in sorted(runs, key=lambda rows: (rows[0]["config"], rows[0]["seed"], len(rows))):
        config, seed = rows[0]["config"], rows[0]["seed"]
        train = " / ".join(f"{r['train_accuracy']:.3f}" for r in rows)
        dev = " / ".join(f"{r['dev_accuracy']:.3f}" for r in rows)
        print(f"| {config} | {seed} | {train} | {dev} | {rows[-1]['seconds'] / len(rows):.0f} |")
    stats = [r for r in records if r["event"] == "stats"]
    for r in stats:
        print(f"\n{r['config']} seed {r['seed']} at {r['at']} (probe loss {r['probe_loss']:.4f}; "
              "attention rows: value/output, then query/key gradients)")
        print("| stage | rms | pos | doc | docmax | grad | grad/weight |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for stage, s in r["stages"].items():
            if stage.endswith("/pool"):
                continue
            grad = relative = ""
            for group in _groups_of(stage):
                g = r["gradients"].get(group, {})
                grad += f"{g.get('grad', float('nan')):.3g} "
                relative += f"{g.get('relative', float('nan')):.3g} "
            print(f"| {stage} | {s['rms']:.3g} | {s['pos']:.3g} | {s['doc']:.3g} | "
                  f"{s['docmax']:.3g} | {grad.strip()} | {relative.strip()} |")
        print("attention entropy / log(keys): " + ", ".join(
            f"{k} {v:.3f}" for k, v in r["attn_entropy"].items()))
        print("gradients: embedding {:.3g}, head {:.3g}".format(
            r["gradients"].get("embedding", {}).get("grad", float("nan")),
            r["gradients"].get("head", {}).get("grad", float("nan"))))


def _groups_of(stage):
    """The weight groups that compute a stage (the attention: value/output,
    then query/key)."""
    if stage == "regions":
        return ["multi_region"]
    block, part = stage.split("/")
    prefix = f"pyramid_{block[5:]}/"
    return [prefix + part] + ([prefix + "attention_qk"] if part == "attention" else [])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir")
    parser.add_argument("--configs", nargs="+", default=["blocks=1", "blocks=3", "blocks=5",
                                                          "blocks=7"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[1])
    parser.add_argument("--train", type=int, default=5000)
    parser.add_argument("--dev", type=int, default=2000)
    parser.add_argument("--probe", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--early-steps", type=int, default=50)
    parser.add_argument("--data-seed", type=int, default=0)
    parser.add_argument("--init-only", action="store_true",
                        help="measure at initialisation only, no training")
    parser.add_argument("--table", metavar="JSONL", help="print tables from a results file")
    args = parser.parse_args()
    if args.table:
        print_tables(args.table)
        return 0
    data = prepare(args)
    for spec in args.configs:
        for seed in args.seeds:
            if args.init_only:
                measure(build(spec, seed, data)[1], data, "init", {"config": spec, "seed": seed})
            else:
                run(spec, seed, data, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
