"""Run folders never lose work: finished and interrupted runs are refused
unless resumed or overwritten, and one process at a time trains in a folder
(a lock naming its holder; a dead holder's lock is taken over)."""

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from keras_posattn.training import trainer
from keras_posattn.training.run_folder import RunFolder
from keras_posattn.training.settings import TrainingError


def _finished(path):
    folder = RunFolder(path).open()
    folder.write_result({"test_accuracy": 0.5})
    folder.close()
    return folder


def test_a_finished_run_is_refused_without_overwrite(tmp_path):
    folder = _finished(tmp_path / "run")
    assert folder.finished() and not folder.lock_path.exists()
    for resume in (False, True):
        with pytest.raises(TrainingError, match="holds a finished run.*--overwrite"):
            RunFolder(folder.path).open(resume=resume)
    assert folder.result_path.exists()  # nothing lost
    again = RunFolder(folder.path).open(overwrite=True)
    assert not again.result_path.exists() and again.lock_path.exists()
    again.close()
    assert not again.lock_path.exists()


def test_an_interrupted_run_needs_resume_or_overwrite(tmp_path):
    folder = RunFolder(tmp_path / "run").open()
    folder.backup.mkdir()
    folder.close()
    with pytest.raises(TrainingError, match="interrupted run.*--resume.*--overwrite"):
        RunFolder(folder.path).open()
    RunFolder(folder.path).open(resume=True).close()
    assert folder.backup.exists()
    RunFolder(folder.path).open(overwrite=True).close()
    assert not folder.backup.exists()


def test_trained_weights_not_yet_scored_are_an_interrupted_run(tmp_path):
    """``trained.npz`` without a record: resumed at its last epoch, refused
    without resume or overwrite, and gone once the result is written."""
    folder = RunFolder(tmp_path / "run").open()
    folder.write_history({0: {"loss": 1.0}, 1: {"loss": 0.5}})
    folder.trained.write_bytes(b"weights")
    folder.close()
    assert folder.interrupted() and not folder.finished() and folder.resumed_epoch() == 2
    with pytest.raises(TrainingError, match=r"interrupted run \(trained, not yet scored: "
                                            r"weights in .*trained.npz\).*--resume"):
        RunFolder(folder.path).open()
    resumed = RunFolder(folder.path).open(resume=True)
    resumed.write_result({"test_accuracy": 0.5})
    resumed.close()
    assert not folder.trained.exists() and folder.finished()


def _lock(folder, **holder):
    folder.path.mkdir(parents=True, exist_ok=True)
    folder.lock_path.write_text(json.dumps(
        {"pid": os.getpid(), "host": socket.gethostname(), "started": "2026-01-02 03:04:05",
         **holder}))


def test_a_second_process_is_kept_out_with_a_line_naming_the_holder(tmp_path):
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        folder = RunFolder(tmp_path / "run")
        _lock(folder, pid=sleeper.pid)
        with pytest.raises(TrainingError) as refused:
            RunFolder(folder.path).open()
        message = str(refused.value)
        assert f"in use by pid {sleeper.pid} on {socket.gethostname()}" in message
        assert "since 2026-01-02 03:04:05" in message and "\n" not in message
    finally:
        sleeper.kill()
        sleeper.wait()
    # The holder is gone: its lock is taken over.
    taken = RunFolder(folder.path).open()
    assert json.loads(taken.lock_path.read_text())["pid"] == os.getpid()
    taken.close()


def test_locks_of_other_hosts_and_unreadable_locks(tmp_path):
    folder = RunFolder(tmp_path / "run")
    _lock(folder, pid=1, host="elsewhere")  # a shared disk: the pid cannot be checked
    with pytest.raises(TrainingError, match="in use by pid 1 on elsewhere"):
        RunFolder(folder.path).open()
    folder.lock_path.write_text("")  # a process that died while writing it ...
    with pytest.raises(TrainingError, match="in use"):
        RunFolder(folder.path).open()  # ... or one writing it right now
    old = time.time() - 3600
    os.utime(folder.lock_path, (old, old))
    RunFolder(folder.path).open().close()  # an hour later it is a leftover


def test_the_run_releases_its_lock_when_it_fails(tmp_path):
    with pytest.raises(TrainingError, match="trek"):
        trainer.train("mpsan", dataset="trek", data_dir=tmp_path, output_dir=tmp_path / "run")
    assert (tmp_path / "run").is_dir() and not (tmp_path / "run" / ".lock").exists()
