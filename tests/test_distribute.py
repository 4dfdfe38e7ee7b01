"""Training beyond one machine: two MultiWorkerMirroredStrategy workers on
127.0.0.1, started as processes with TF_CONFIG, train a few steps in step."""

import json
import os
import socket
import subprocess
import sys

import pytest

from keras_posattn.training import distribute


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def test_two_workers_train_in_step(tmp_path):
    # Kim's CNN: the strategy is the subject, and its step traces ~5x quicker
    # than MPSAN's in each worker.
    command = [sys.executable, "-m", "keras_posattn.cli", "train", "kim_cnn_static",
               "--strategy", "multi_worker", "--demo-size", "300", "--epochs", "2",
               "--set", "embedding_dim=16", "--set", "filters=8",
               "--output-dir", str(tmp_path / "run"),
               "--export-dir", str(tmp_path / "sm"), "--verbose", "2"]
    outputs = _two_workers(command, tmp_path)
    assert "MultiWorkerMirroredStrategy" in outputs[0] or "CollectiveAllReduce" in outputs[0]
    assert "2 replicas, 2 worker(s)" in outputs[0]
    chief = json.loads((tmp_path / "run" / "result.json").read_text())
    worker = json.loads((tmp_path / "run.worker1" / "result.json").read_text())
    # Synchronous training: both workers saw the same (all-reduced) losses.
    assert chief["history"]["loss"] == pytest.approx(worker["history"]["loss"])
    assert len(chief["history"]["loss"]) == 2
    assert chief["test_accuracy"] == pytest.approx(worker["test_accuracy"])
    # Only the chief exports.
    assert (tmp_path / "sm" / "kim_cnn_static" / "1" / "saved_model.pb").exists()
    assert chief["export_dir"] and worker["export_dir"] is None


#: One worker of a two-worker strategy: the rows it reads from ``shard_steps``
#: over 10 shuffled rows in batches of 4, for two epochs straight and for the
#: second epoch of a run resumed after the first (``start_epoch=1``).
_READER = """
import json, sys
import tensorflow as tf
strategy = tf.distribute.MultiWorkerMirroredStrategy()
from keras_posattn.training import distribute

def rows(start_epoch, epochs):
    data = tf.data.Dataset.range(10).shuffle(10, seed=7).batch(4)
    data, steps = distribute.shard_steps(data, 2, start_epoch)
    batches = iter(strategy.experimental_distribute_dataset(data))
    read = []
    for _ in range(epochs):
        read.append(sorted(int(v) for _ in range(steps) for v in
                           strategy.experimental_local_results(next(batches))[0].numpy()))
    return read

print("ROWS " + json.dumps({"straight": rows(0, 2), "resumed": rows(1, 1)}), flush=True)
"""


def _two_workers(command, cwd, timeout=600):
    """Each worker's output: ``command`` run as the two workers of a local
    cluster (TF_CONFIG), both to completion."""
    ports = _free_ports(2)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    processes = []
    for index in range(2):
        env = dict(os.environ, TF_CONFIG=json.dumps(
            {"cluster": cluster, "task": {"type": "worker", "index": index}}))
        processes.append(subprocess.Popen(command, env=env, cwd=cwd, text=True,
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    outputs = []
    try:
        for proc in processes:
            out, _ = proc.communicate(timeout=timeout)
            outputs.append(out)
            assert proc.returncode == 0, out[-3000:]
    finally:
        for proc in processes:
            if proc.poll() is None:
                proc.kill()
    return outputs


def test_an_epoch_reads_every_row_once_and_a_resumed_one_where_it_stopped(tmp_path):
    """The strategy splits every global batch between the workers, so an
    epoch is as many steps as the set has batches (not a share of them): the
    two workers together read each training row once an epoch. A run resumed
    after its first epoch reads, on each worker, what that worker read in the
    uninterrupted run's second epoch (the same shuffle order)."""
    outputs = _two_workers([sys.executable, "-c", _READER], tmp_path)
    reads = [json.loads(next(line[5:] for line in out.splitlines() if line.startswith("ROWS ")))
             for out in outputs]
    for epoch in range(2):
        assert sorted(reads[0]["straight"][epoch] + reads[1]["straight"][epoch]) == list(range(10))
    for read in reads:
        assert read["resumed"] == read["straight"][1:]
        assert read["straight"][0] != read["straight"][1]  # each epoch reshuffles


def test_multi_worker_needs_tf_config(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ValueError, match="TF_CONFIG"):
        distribute.make_strategy("multi_worker")
    with pytest.raises(ValueError, match="Unknown strategy"):
        distribute.make_strategy("tpu")
    assert distribute.make_strategy("default") is None


def test_task_and_chief_from_tf_config(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": {"worker": ["a:1", "b:2", "c:3"]}, "task": {"type": "worker", "index": 2}}))
    assert distribute.task() == ("worker", 2, 3) and not distribute.is_chief()
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": {"chief": ["a:1"], "worker": ["b:2"]}, "task": {"type": "chief", "index": 0}}))
    assert distribute.task() == ("chief", 0, 2) and distribute.is_chief()
    monkeypatch.delenv("TF_CONFIG")
    assert distribute.task() == ("worker", 0, 1) and distribute.is_chief()
