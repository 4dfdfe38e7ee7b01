"""A run's folder: what it holds, and the rules that keep work in it.

    <run>/.lock                   the process training here (pid, host, start)
    <run>/backup/                 Keras BackupAndRestore (an interrupted run)
    <run>/checkpoints/last.keras  the classifier after the last epoch
    <run>/history.json            every epoch's logs so far (across resumes)
    <run>/trained.npz             the weights training kept (the selected epoch's
                                  where the recipe selects one), from the end of
                                  training until result.json is written
    <run>/logs/                   TensorBoard
    <run>/vocabulary.txt, labels.txt
    <run>/classifier.keras        the finished classifier
    <run>/result.json             the finished run's record

Work is never lost: the backup goes only once the trained weights are
written, so a run cut short while it is scored or saved resumes without
training again. A folder holding an interrupted run (a backup or trained
weights) is refused unless the run is resumed (``resume``) or discarded
(``overwrite``); a folder holding a finished run is refused unless it is
discarded. One process at a time trains in a folder: ``open`` takes
``.lock`` or refuses with a line naming the holder; a lock left by a process
that no longer runs on this machine is taken over.
"""

import json
import os
import shutil
import socket
import time
from pathlib import Path

import numpy as np

from keras_posattn.training.settings import TrainingError
from keras_posattn.utils import process_alive

LOCK_FILE = ".lock"
#: A lock file that cannot be read is taken for a crash's leftover after this long.
UNREADABLE_LOCK_SECONDS = 60


def _log(message):
    print(message, flush=True)


def _write_json(path, value):
    """``path`` replaced whole by ``value`` as JSON (never half-written)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(value, indent=2, default=str))
    os.replace(tmp, path)


def _write_npz(path, **arrays):
    """``path`` replaced whole by ``arrays`` (``np.savez``), never half-written."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as f:
        np.savez(f, **arrays)
    os.replace(tmp, path)


class RunFolder:
    """The folder of one run (see the module docstring)."""

    def __init__(self, path):
        self.path = Path(path)
        self._locked = False

    @property
    def backup(self):
        return self.path / "backup"

    @property
    def logs(self):
        return self.path / "logs"

    @property
    def checkpoint(self):
        return self.path / "checkpoints" / "last.keras"

    @property
    def trained(self):
        return self.path / "trained.npz"

    @property
    def history_path(self):
        return self.path / "history.json"

    @property
    def result_path(self):
        return self.path / "result.json"

    @property
    def lock_path(self):
        return self.path / LOCK_FILE

    def interrupted(self):
        """Whether the folder holds an interrupted run: a backup to resume
        training from, or trained weights not yet scored (``trained``)."""
        return self.backup.exists() or self.trained.exists()

    def resumed_epoch(self):
        """The epoch an interrupted run resumes at: the epochs Keras's
        ``BackupAndRestore`` saved in the backup, or every epoch of the
        history when training had finished (``trained``); 0 without either."""
        path = self.backup / "training_metadata.json"
        if path.exists():
            return int(json.loads(path.read_text())["epoch"])
        return len(self.read_history()) if self.trained.exists() else 0

    def _what_is_interrupted(self):
        if self.backup.exists():
            return f"checkpoint in {self.backup}"
        return f"trained, not yet scored: weights in {self.trained}"

    def save_trained(self, model):
        """The model's weights at the end of training (``trained``), written
        before the backup is removed."""
        _write_npz(self.trained, **{f"w{i}": w for i, w in enumerate(model.get_weights())})

    def load_trained(self, model):
        """Put the weights ``save_trained`` wrote into ``model`` (built as the
        run's was)."""
        with np.load(self.trained) as stored:
            values = [stored[f"w{i}"] for i in range(len(stored.files))]
        if len(values) != len(model.weights):
            raise TrainingError(
                f"{self.trained} holds {len(values)} weights and the model has "
                f"{len(model.weights)}: it was trained with other settings. Pass --overwrite "
                "to train it again.")
        model.set_weights(values)

    def drop_trained(self):
        """Remove the trained weights once the run's record is written."""
        self.trained.unlink(missing_ok=True)

    def finished(self):
        """Whether the folder holds a finished run (its classifier or record)."""
        return not self.interrupted() and (
            self.result_path.exists() or (self.path / "classifier.keras").exists())

    def open(self, resume=False, overwrite=False):
        """Take the folder for a run (its lock) and refuse to clobber work:
        an interrupted run needs ``resume`` or ``overwrite``, a finished one
        ``overwrite``, which empties the folder. Returns ``self``; ``close``
        releases the lock."""
        self.path.mkdir(parents=True, exist_ok=True)
        self.lock()
        try:
            if self.interrupted() and not (resume or overwrite):
                raise TrainingError(
                    f"{self.path} holds an interrupted run ({self._what_is_interrupted()}). "
                    "Pass --resume to continue it or --overwrite to start over."
                )
            if self.finished() and not overwrite:
                raise TrainingError(
                    f"{self.path} holds a finished run ({self.result_path.name}); pass "
                    "--overwrite to replace it or choose another --output-dir."
                )
            if overwrite:
                self._empty()
            elif resume and not self.interrupted():
                _log(f"--resume: no interrupted run in {self.path}; starting a new one.")
            self.checkpoint.parent.mkdir(parents=True, exist_ok=True)
        except BaseException:
            self.close()
            raise
        return self

    def close(self):
        """Release the folder's lock (if this process took it)."""
        if self._locked:
            self.lock_path.unlink(missing_ok=True)
            self._locked = False

    def _empty(self):
        for entry in self.path.iterdir():
            if entry == self.lock_path:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()

    # --- the lock ---------------------------------------------------------------

    def lock(self):
        """Create ``.lock`` holding this process's pid, host and start time,
        or refuse with one line naming the process that holds it; a lock of
        a process that no longer runs (on this host) is taken over."""
        mine = {"pid": os.getpid(), "host": socket.gethostname(),
                "started": time.strftime("%Y-%m-%d %H:%M:%S")}
        for _ in range(3):
            try:
                fd = os.open(self.lock_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = self._holder()
                if holder is not None:
                    raise TrainingError(
                        f"{self.path} is in use by pid {holder.get('pid')} on "
                        f"{holder.get('host')} since {holder.get('started')} (remove "
                        f"{self.lock_path} if that process is gone)."
                    ) from None
                continue
            with os.fdopen(fd, "w") as f:
                json.dump(mine, f)
            self._locked = True
            return
        raise TrainingError(f"{self.path}: could not take {self.lock_path}; try again.")

    def _holder(self):
        """The live holder of an existing lock, or None after removing a
        stale one (its process gone from this host, or unreadable and old)."""
        try:
            holder = json.loads(self.lock_path.read_text())
            pid, host = int(holder["pid"]), holder["host"]
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError):
            try:
                age = time.time() - self.lock_path.stat().st_mtime
            except FileNotFoundError:
                return None
            if age < UNREADABLE_LOCK_SECONDS:
                return {"pid": "?", "host": "?", "started": "a moment ago"}
            holder = None
        else:
            if host != socket.gethostname() or (pid != os.getpid() and process_alive(pid)):
                return holder
        _log(f"Taking over {self.lock_path}, left by "
             + (f"pid {holder['pid']} (no longer running)." if holder else "a crashed process."))
        self.lock_path.unlink(missing_ok=True)
        return None

    # --- what a run writes --------------------------------------------------------

    def write_vocabulary(self, preprocessor, label_names, resume=False):
        """``vocabulary.txt`` and ``labels.txt``; on ``resume`` the vocabulary
        must be the interrupted run's."""
        vocab_file = self.path / "vocabulary.txt"
        if resume and vocab_file.exists():
            if vocab_file.read_text(encoding="utf-8").split("\n") != list(preprocessor.vocabulary):
                raise TrainingError(
                    f"--resume: the vocabulary built from the training data differs from "
                    f"the one saved in {vocab_file}; was the data changed?"
                )
        vocab_file.write_text("\n".join(preprocessor.vocabulary), encoding="utf-8")
        (self.path / "labels.txt").write_text("\n".join(label_names) + "\n", encoding="utf-8")

    def read_history(self):
        """``{epoch: logs}`` written so far (none in a new run)."""
        if not self.history_path.exists():
            return {}
        return {int(k): v for k, v in json.loads(self.history_path.read_text()).items()}

    def write_history(self, epochs):
        _write_json(self.history_path, {str(k): v for k, v in sorted(epochs.items())})

    def write_result(self, record):
        """``result.json``, replaced whole; the run is finished, so its
        trained weights (``trained``) go."""
        _write_json(self.result_path, record)
        self.drop_trained()


def prepare_output_dir(output_dir, resume=False, overwrite=False):
    """Create a run folder, checked as ``RunFolder.open`` checks it (its
    lock released again); returns its path."""
    folder = RunFolder(output_dir).open(resume, overwrite)
    folder.close()
    return folder.path
