"""Training on several devices or machines with ``tf.distribute``.

``make_strategy("multi_worker")`` is a ``MultiWorkerMirroredStrategy`` whose
cluster comes from the ``TF_CONFIG`` environment variable, e.g. on the first
of two machines::

    TF_CONFIG='{"cluster": {"worker": ["host1:12345", "host2:12345"]},
                "task": {"type": "worker", "index": 0}}' \\
        keras-posattn train mpsan --strategy multi_worker ...

and ``"index": 1`` on the second. ``"mirrored"`` is a ``MirroredStrategy`` over
this machine's devices. A strategy must be made before TensorFlow runs its
first operation, so the trainer makes it first.

Under a multi-worker strategy every worker trains on its shard of each batch
stream with the same number of steps (uneven shards would leave one worker
waiting for the others at the end of an epoch), batches are padded to the
preprocessor's ``max_length`` (one shape), and XLA is off. The chief (worker 0
when the cluster has no "chief" task) writes the run folder and exports;
the other workers write to ``<output>.worker<index>`` beside it and do not
export. ``adapt_model`` works around two Keras 3.15 bugs of distributed
training on the model instance the trainer fits (the model classes know
nothing of tf.distribute).
"""

import json
import os

import tensorflow as tf

from keras_posattn.training.settings import STRATEGIES


def make_strategy(name):
    """A ``tf.distribute`` strategy, or None for ``"default"`` / None."""
    if name in (None, "default"):
        return None
    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    if name == "multi_worker":
        if not os.environ.get("TF_CONFIG"):
            raise ValueError(
                "--strategy multi_worker reads the cluster from TF_CONFIG, which is not set "
                '(e.g. TF_CONFIG=\'{"cluster": {"worker": ["host1:12345", "host2:12345"]}, '
                '"task": {"type": "worker", "index": 0}}\').'
            )
        options = tf.distribute.experimental.CommunicationOptions(
            implementation=tf.distribute.experimental.CommunicationImplementation.RING)
        return tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    raise ValueError(f"Unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}.")


def task():
    """``(type, index, number of workers)`` from ``TF_CONFIG`` (a single
    machine: ``("worker", 0, 1)``)."""
    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    cluster = config.get("cluster", {})
    task_ = config.get("task", {})
    workers = len(cluster.get("worker", [])) + len(cluster.get("chief", []))
    return task_.get("type", "worker"), int(task_.get("index", 0)), max(1, workers)


def num_workers(strategy):
    """The workers training together under ``strategy`` (1 but for a
    multi-worker strategy)."""
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return task()[2]
    return 1


def is_chief():
    """Whether this process writes the run's outputs."""
    kind, index, _ = task()
    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    if "chief" in config.get("cluster", {}):
        return kind == "chief"
    return kind == "worker" and index == 0


def shard_steps(dataset, num_workers, start_epoch=0):
    """``(repeated dataset, steps)``: an epoch of every worker over
    ``dataset``'s batches, for a multi-worker strategy.

    The strategy splits each of ``dataset``'s (global) batches between the
    replicas of all workers (it rebatches, then shards by element): every
    worker takes its part of every batch, so an epoch is as many steps as
    ``dataset`` has batches, on each worker. (A final batch with fewer rows
    than replicas leaves some replicas an empty part; the all-reduced loss
    and metrics count the rows there are.) Keras keeps one iterator of the
    repeated set across the epochs; ``start_epoch`` skips the batches of the
    epochs a resumed run has finished, so that its next epoch reads what the
    uninterrupted run's did: the skipped repetitions draw the same shuffle
    orders. ``num_workers`` is for the error message."""
    batches = int(dataset.cardinality().numpy())
    if batches < 1:
        raise ValueError(f"A multi-worker run ({num_workers} workers) needs a dataset of known, "
                         f"positive length; this one has cardinality {batches}.")
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    repeated = dataset.repeat()
    if start_epoch:
        repeated = repeated.skip(int(start_epoch) * batches)
    return repeated.with_options(options), batches


def _vector_logs(logs):
    # Keras 3.15 averages each replica's logs over workers with
    # strategy.reduce("MEAN", value, axis=0), which rejects the scalar losses
    # and metrics a step returns ("Invalid reduction dimension 0 for input
    # with 0 dimensions"). One-element vectors reduce to the same scalars.
    strategy = tf.distribute.get_strategy()
    if not (isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
            and strategy.extended._in_multi_worker_mode()):
        return logs
    return {k: tf.reshape(v, [1]) if getattr(v, "shape", None) == () else v
            for k, v in logs.items()}


def adapt_model(model):
    """Patch ``model`` (this instance only) for training under a strategy.

    - Its train and test steps return one-element vectors instead of scalar
      logs under a multi-worker strategy (see ``_vector_logs``).
    - Keras 3.15 builds a distributed model from the first batch averaged
      with ``strategy.reduce("MEAN", (x, y))``, which fails under
      ``MultiWorkerMirroredStrategy`` ("Attempt to convert a value
      (PerReplica) to a Tensor": that reduce takes one value, not a tuple).
      Shapes are all the build needs: the patched build takes this worker's
      first replica's batch instead.

    Returns ``model``.
    """
    from keras import tree

    train_step, test_step = model.train_step, model.test_step
    build = model._maybe_symbolic_build

    def symbolic_build(iterator=None, data_batch=None):
        strategy = getattr(model, "_distribute_strategy", None)
        if iterator is None or strategy is None:
            return build(iterator=iterator, data_batch=data_batch)
        for _, _, it in iterator:
            data_batch = tree.map_structure(
                lambda x: strategy.experimental_local_results(x)[0]
                if isinstance(x, tf.distribute.DistributedValues) else x,
                next(it),
            )
            break
        return build(data_batch=data_batch)

    # object.__setattr__: plain attributes, outside Keras' layer tracking.
    object.__setattr__(model, "train_step", lambda data: _vector_logs(train_step(data)))
    object.__setattr__(model, "test_step", lambda data: _vector_logs(test_step(data)))
    object.__setattr__(model, "_maybe_symbolic_build", symbolic_build)
    return model
