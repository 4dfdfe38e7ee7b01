"""Where a dev-accuracy dip comes from: a shifted decision, or lost ranking.

Trains one ``recipe_dev.py`` candidate (the same run: the trainer's ``fit``,
the recipe's callbacks) and after every epoch scores the dev split's
predictions three ways: the accuracy, the share of dev texts predicted as each
class, and, for two classes, the ranking of the texts by the positive class's
logit margin: its ROC AUC and the accuracy of a threshold that predicts the
dev split's own class balance (``prior_matched``: the top texts by margin,
as many as the dev split's positives, called positive). A dip that a shift of
the decision causes leaves the ranking (AUC, ``prior_matched``) where it was
while the predicted shares swing; a dip the representation causes drops the
ranking too. The test split is never evaluated.

    python benchmarks/dev_calibration.py cspan --dataset mr --fold 0 --seeds 1235 \\
        --candidate default=50d >> results/dev_calibration.jsonl

Prints one JSON line per epoch and one per run (the run's ``recipe_dev``
record); ``prior_matched`` and ``auc`` are null for more than two classes.
"""

import argparse
import json
import sys

import numpy as np
import recipe_dev

import keras  # noqa: E402  (after recipe_dev, which quiets TensorFlow)


def ranking_scores(margins, labels):
    """``(auc, prior_matched)`` of binary ``labels`` (0/1) ranked by
    ``margins`` (higher: more positive). ``auc`` is scikit-learn's (tied
    pairs count half); ``prior_matched`` calls the ``labels.sum()`` highest
    margins positive."""
    from sklearn.metrics import roc_auc_score

    margins = np.asarray(margins, dtype=np.float64)
    labels = np.asarray(labels).astype(bool)
    positives = int(labels.sum())
    if positives in (0, len(labels)):
        return None, None
    called = np.zeros(len(margins), dtype=bool)
    called[np.argsort(margins, kind="stable")[len(margins) - positives:]] = True
    return float(roc_auc_score(labels, margins)), float(np.mean(called == labels))


def epoch_scores(logits, labels, num_classes):
    """One epoch's dev readings from its logits (``n x classes``)."""
    logits = np.asarray(logits, dtype=np.float64)
    labels = np.asarray(labels)
    predicted = logits.argmax(axis=-1)
    shares = np.bincount(predicted, minlength=num_classes) / len(labels)
    auc = prior_matched = None
    if num_classes == 2:
        auc, prior_matched = ranking_scores(logits[:, 1] - logits[:, 0], labels)
    return {"accuracy": round(float(np.mean(predicted == labels)), 4),
            "predicted_shares": [round(float(s), 4) for s in shares],
            "true_shares": [round(float(s), 4)
                            for s in np.bincount(labels, minlength=num_classes) / len(labels)],
            "auc": None if auc is None else round(auc, 4),
            "prior_matched": None if prior_matched is None else round(prior_matched, 4)}


class DevReadings(keras.callbacks.Callback):
    """After each epoch, the dev split's ``epoch_scores`` (printed as JSON),
    of the weights the epoch was scored on (after the recipe's callbacks: a
    recipe's weight average is still swapped in)."""

    def __init__(self, data, label):
        super().__init__()
        self.label = label
        self.batches = data.batches("dev", 64, buckets=False)
        self.labels = np.asarray(data.splits.dev.labels)
        self.num_classes = len(data.label_names)

    def on_epoch_end(self, epoch, logs=None):
        logits = self.model.predict(self.batches, verbose=0)
        if len(logits) != len(self.labels):
            raise RuntimeError(f"{len(logits)} dev predictions for {len(self.labels)} texts")
        line = {"benchmark": "dev_calibration", **self.label, "epoch": epoch + 1,
                "val_accuracy": round(float((logs or {}).get("val_accuracy", float("nan"))), 4),
                **epoch_scores(logits, self.labels, self.num_classes)}
        print(json.dumps(line), flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model")
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--data-dir")
    parser.add_argument("--fold", type=int)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1234])
    parser.add_argument("--candidate", required=True, help="NAME=BASE[:JSON], as recipe_dev.py")
    parser.add_argument("--max-train", type=int)
    args = parser.parse_args(argv)
    name, base, config, recipe = recipe_dev.parse_candidate(args.candidate)
    for seed in args.seeds:
        label = {"model": args.model, "dataset": args.dataset, "fold": args.fold,
                 "candidate": name, "seed": seed}
        record = recipe_dev.run_candidate(
            args.model, base, config, recipe, args.dataset, args.data_dir, args.fold, False,
            seed, args.max_train, callbacks=lambda data: [DevReadings(data, label)])
        print(json.dumps({"benchmark": "recipe_dev", **label, **record}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
