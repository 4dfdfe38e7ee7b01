"""Compare training recipes on a validation split only (never the test split).

How the ``[<preset>.glove50d]`` settings were chosen: each candidate is a
base recipe (``paper`` or ``50d``) with model arguments and recipe fields on
top; every candidate trains once per seed on the named set's training split
and is scored on its dev split (SST's official dev; TREC's and IMDB's seeded
10% of train; for a cross-validated set the stratified 10% held out of the
other nine folds of ``--fold``). The score is what the recipe would keep: the
best epoch's validation accuracy when it selects on dev (``select_best`` or
``early_stopping``), else the last epoch's. Prints one JSON line per run and
one per candidate (mean, std over seeds); the test split is never evaluated.
Each epoch's dev accuracy goes to stderr as it is measured. Runs compute in
Keras' global dtype policy (float32 unless changed): a recipe's
``mixed_bfloat16`` is not applied here (the record's ``dtype_policy`` says
which policy ran), as the tables in BENCHMARKS.md were made.

    python benchmarks/recipe_dev.py spe_cnn --dataset trec --seeds 1234 1235 1236 \\
        --candidate paper=paper \\
        --candidate 'adam3=paper:{"recipe": {"learning_rate": 1e-3}}' \\
        --candidate 'adam3_tuned=paper:{"recipe": {"learning_rate": 1e-3},
                     "config": {"trainable_embeddings": "all"}}'

A candidate is ``NAME=BASE[:JSON]``, JSON with optional ``config`` (model
arguments) and ``recipe`` (``Recipe`` fields) objects. ``--max-train N``
trains on a seeded sample of N training texts (a quick look on large sets).

Every run trains through the trainer's ``fit`` (the recipe's callbacks, the
per-epoch backup that makes a run resumable) in a folder of its own: a
temporary one, or with ``--work-dir DIR`` one under DIR that outlives the
process. Run the same command again with the same ``--work-dir`` and an
interrupted run resumes from its last finished epoch, training as the
uninterrupted run would have; a finished run is not trained again (its record
is in its folder's ``record.json``). A folder's ``unit.json`` records the
candidate as given and what it resolves to (the model's arguments, the
recipe's fields, the vectors among them); a folder is refused when either
differs, e.g. ``glove=50d`` after the preset's default vectors changed. Each
run's JSON line is printed once, by the invocation that finishes it, so
appending every invocation's output to one file (``>>``) keeps one line a run.

``--deterministic`` runs TensorFlow's deterministic kernels: float32 runs on
a CPU otherwise drift apart in the last digits from the first epoch, so two
candidates compared on one seed differ by that noise too (BENCHMARKS.md,
"Deterministic reruns").
"""

import argparse
import dataclasses
import json
import pathlib
import statistics
import sys
import tempfile
import time

from keras_posattn.cli import quiet_tensorflow  # noqa: E402

quiet_tensorflow()

import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_posattn.training import trainer  # noqa: E402
from keras_posattn.training.run_folder import RunFolder  # noqa: E402
from keras_posattn.training.run_folder import _write_json  # noqa: E402


def parse_candidate(text):
    if "=" not in text:
        raise SystemExit(f"--candidate expects NAME=BASE[:JSON], got {text!r}")
    name, rest = text.split("=", 1)
    base, _, extra = rest.partition(":")
    extra = json.loads(extra) if extra.strip() else {}
    unknown = set(extra) - {"config", "recipe"}
    if unknown or base not in trainer.RECIPES:
        raise SystemExit(f"candidate {name!r}: base must be one of {trainer.RECIPES} and the "
                         f"JSON may hold 'config' and 'recipe' only")
    return name, base, extra.get("config", {}), extra.get("recipe", {})


class _Clock(keras.callbacks.Callback):
    """Times the run and prints each epoch's dev accuracy to stderr, so a long
    run shows its curve before its JSON line (and an interrupted one leaves it)."""

    def __init__(self, label):
        super().__init__()
        self.label = label
        self.start = time.perf_counter()  # (a run that had trained never begins)

    def on_train_begin(self, logs=None):
        self.start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        print(f"{self.label} epoch {epoch + 1}: accuracy {logs.get('accuracy', float('nan')):.4f}, "
              f"dev {logs.get('val_accuracy', float('nan')):.4f} "
              f"({time.perf_counter() - self.start:.0f} s)", file=sys.stderr, flush=True)


def candidate_settings(model_name, base, config, recipe_changes):
    """The preset's settings under ``base`` with the candidate's changes."""
    settings = trainer.resolve_settings(model_name, demo=False, overrides=config,
                                        recipe_name=base)
    settings.recipe = settings.recipe.replace(**recipe_changes)
    return settings


def resolved(settings):
    """What a candidate resolves to, as JSON: the model's constructor
    arguments and the recipe's set fields (the record's ``recipe``). A
    candidate's overrides alone do not fix it: ``glove=50d`` trains other
    vectors once the preset's default changes."""
    recipe = {k: v for k, v in settings.recipe.as_dict().items() if v is not None}
    return json.loads(json.dumps({"config": settings.config, "recipe": recipe}, default=str))


def run_candidate(model_name, base, config, recipe_changes, dataset, data_dir, fold, phrases,
                  seed, max_train=None, max_length=None, max_tokens=None, output_dir=None,
                  callbacks=None):
    """Train one candidate once and return its record. ``output_dir`` is the
    run's folder (a temporary one when None); if it holds an interrupted run
    of the same candidate, the run resumes there. ``callbacks``: Keras
    callbacks added to the recipe's, or a function of the run's prepared data
    returning them (a callback that reads the dev split)."""
    if output_dir is None:
        with tempfile.TemporaryDirectory(prefix="recipe_dev-") as tmp:
            return run_candidate(model_name, base, config, recipe_changes, dataset, data_dir,
                                 fold, phrases, seed, max_train, max_length, max_tokens,
                                 pathlib.Path(tmp), callbacks)
    keras.utils.set_random_seed(seed)
    settings = candidate_settings(model_name, base, config, recipe_changes)
    data = trainer.prepare_data(settings, trainer.RunOptions(
        model_name=model_name, dataset=dataset, data_dir=data_dir, fold=fold, phrases=phrases,
        seed=seed, max_length=max_length, max_tokens=max_tokens))
    splits = data.splits
    if max_train and len(splits.train) > max_train:
        keep = np.random.default_rng(seed).permutation(len(splits.train))[:max_train]
        data.splits = dataclasses.replace(splits, train=splits.train.take(keep))
    model = trainer.build_model(settings, data)
    recipe = settings.recipe
    resumed = RunFolder(output_dir).resumed_epoch()
    if resumed:
        print(f"{model_name} {dataset} seed {seed}: resuming after epoch {resumed} "
              f"({output_dir})", file=sys.stderr, flush=True)
    clock = _Clock(f"{model_name} {dataset} seed {seed}")
    extra = callbacks(data) if callable(callbacks) else (callbacks or [])
    history = trainer.fit(model, data, recipe, output_dir, seed=seed,
                          callbacks=[clock, *extra], verbose=0,
                          resume=bool(resumed)).history
    val = [float(v) for v in history["val_accuracy"]]
    selects = bool(recipe.select_best or recipe.early_stopping)
    score = max(val) if selects else val[-1]
    return {
        "dev_accuracy": score,
        "best_epoch": int(np.argmax(val)) + 1,
        "epochs_run": len(val),
        "val_accuracy": [round(v, 4) for v in val],
        "train_accuracy": [round(float(v), 4) for v in history["accuracy"]],
        "seconds": round(time.perf_counter() - clock.start, 1),
        **({"resumed_after_epoch": resumed} if resumed else {}),
        "train_size": len(data.splits.train),
        "dev_size": len(splits.dev.texts),
        "vectors": data.vectors_name,
        "dtype_policy": model.dtype_policy.name,
        "deterministic": trainer.op_determinism(),
        "recipe": {k: v for k, v in recipe.as_dict().items() if v is not None},
    }


def _differences(stored, now, prefix=""):
    """The dotted keys where two JSON objects differ."""
    keys = []
    for k in sorted(set(stored) | set(now)):
        a, b = stored.get(k), now.get(k)
        if isinstance(a, dict) and isinstance(b, dict):
            keys += _differences(a, b, f"{prefix}{k}.")
        elif a != b:
            keys.append(f"{prefix}{k}")
    return keys


def _lookup(value, dotted):
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _refuse(folder, stored, unit, keys):
    raise SystemExit(f"{folder} holds another run ({', '.join(keys)} differ: "
                     f"{ {k: _lookup(stored, k) for k in keys} } there, "
                     f"{ {k: _lookup(unit, k) for k in keys} } now); use another "
                     f"--work-dir or candidate name")


def run_folder(work_dir, unit):
    """The folder of one run under ``work_dir``, named by ``unit``'s fields and
    holding them in ``unit.json``; a folder whose ``unit.json`` names another
    run (a candidate name reused with other settings, or the same candidate
    now resolving to other settings because a preset's default changed) is
    refused.

    Folders written before units recorded what they resolve to (no
    ``resolved`` key) are checked against what they still hold: a finished
    run's record names its recipe (vectors included), and must match; an
    unfinished one cannot be checked, so it resumes with a warning. Either
    way its ``unit.json`` then records the resolved settings."""
    name = "-".join(str(unit[k]) for k in ("model", "dataset", "fold", "candidate", "seed")
                    if unit[k] is not None)
    if unit["max_train"]:
        name += f"-train{unit['max_train']}"
    folder = pathlib.Path(work_dir) / name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "unit.json"
    if not path.exists():
        _write_json(path, unit)
        return folder
    stored = json.loads(path.read_text(encoding="utf-8"))
    if stored == unit:
        return folder
    if "resolved" in stored or "resolved" not in unit:
        _refuse(folder, stored, unit, _differences(stored, unit))
    # An older folder: the rest must agree, then what it still holds.
    keys = _differences(stored, {k: v for k, v in unit.items() if k != "resolved"})
    if keys:
        _refuse(folder, stored, unit, keys)
    record = folder / "record.json"
    if record.exists():
        held = {"resolved": {"recipe": json.loads(record.read_text(encoding="utf-8"))["recipe"]}}
        keys = _differences(held, {"resolved": {"recipe": unit["resolved"]["recipe"]}})
        if keys:
            _refuse(folder, held, unit, keys)
    else:
        print(f"{folder}: an unfinished run from before units recorded their resolved "
              f"settings; resuming it as {unit['candidate']!r} resolves now (vectors "
              f"{unit['resolved']['recipe'].get('embeddings')!r}), which cannot be checked "
              f"against what it trained so far: delete the folder to train it afresh",
              file=sys.stderr, flush=True)
    _write_json(path, unit)
    return folder


def main(argv=None, callbacks=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model")
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--data-dir")
    parser.add_argument("--fold", type=int, help="test fold of a cross-validated set "
                        "(its dev split is scored; default 0)")
    parser.add_argument("--phrases", action="store_true")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1234, 1235, 1236])
    parser.add_argument("--candidate", action="append", required=True)
    parser.add_argument("--max-train", type=int)
    parser.add_argument("--max-length", type=int)
    parser.add_argument("--max-tokens", type=int)
    parser.add_argument("--work-dir", help="keep each run's folder here: a rerun of the "
                        "same command resumes interrupted runs and skips finished ones")
    parser.add_argument("--deterministic", action="store_true", help="TensorFlow's "
                        "deterministic kernels (as `keras-posattn train --deterministic`): a "
                        "rerun of a seed on the same machine repeats to the bit")
    args = parser.parse_args(argv)
    from keras_posattn.datasets import catalog

    if args.deterministic:  # for the rest of this process
        trainer.set_op_determinism(True)

    fold = args.fold
    spec = catalog.DATASETS.get(args.dataset)
    if fold is None and spec is not None and spec.kind == "cv":
        fold = 0
    for name, base, config, recipe in map(parse_candidate, args.candidate):
        settled = resolved(candidate_settings(args.model, base, config, recipe))
        scores = []
        for seed in args.seeds:
            unit = {"model": args.model, "dataset": args.dataset, "fold": fold,
                    "phrases": args.phrases, "candidate": name, "base": base, "config": config,
                    "recipe": recipe, "seed": seed, "max_train": args.max_train,
                    "max_length": args.max_length, "max_tokens": args.max_tokens}
            if args.deterministic:  # (older folders' unit.json have no such key)
                unit["deterministic"] = True
            unit["resolved"] = settled
            folder = run_folder(args.work_dir, unit) if args.work_dir else None
            done = folder / "record.json" if folder else None
            if done and done.exists():
                line = json.loads(done.read_text(encoding="utf-8"))
                print(f"{args.model} {args.dataset} {name} seed {seed}: finished earlier, "
                      f"dev {line['dev_accuracy']:.4f} ({done})", file=sys.stderr, flush=True)
            else:
                record = run_candidate(args.model, base, config, recipe, args.dataset,
                                       args.data_dir, fold, args.phrases, seed, args.max_train,
                                       args.max_length, args.max_tokens, folder, callbacks)
                line = {"benchmark": "recipe_dev", "model": args.model,
                        "dataset": args.dataset, "fold": fold, "phrases": args.phrases,
                        "candidate": name, "base": base, "config": config, "seed": seed,
                        **record}
                if done:
                    _write_json(done, line)  # never half-written
                    RunFolder(folder).drop_trained()
                print(json.dumps(line), flush=True)
            scores.append(line["dev_accuracy"])
        print(json.dumps({"benchmark": "recipe_dev_summary", "model": args.model,
                          "dataset": args.dataset, "fold": fold, "candidate": name,
                          "base": base, "config": config, "recipe": recipe,
                          "mean": round(statistics.fmean(scores), 4),
                          "std": round(statistics.stdev(scores), 4) if len(scores) > 1 else 0.0,
                          "runs": len(scores)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
