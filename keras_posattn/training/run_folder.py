"""A run's folder: what it holds, and the rules that keep work in it.

    <run>/backup/                 Keras BackupAndRestore (an interrupted run)
    <run>/checkpoints/last.keras  the classifier after the last epoch
    <run>/logs/                   TensorBoard
    <run>/vocabulary.txt, labels.txt
    <run>/classifier.keras        the finished classifier
    <run>/result.json             the finished run's record

A folder holding an interrupted run is refused unless the run is resumed
(``resume``) or discarded (``overwrite``).
"""

import json
import os
import shutil
from pathlib import Path

from keras_posattn.training.settings import TrainingError


def _log(message):
    print(message, flush=True)


class RunFolder:
    """The folder of one run (see the module docstring)."""

    def __init__(self, path):
        self.path = Path(path)

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
    def result_path(self):
        return self.path / "result.json"

    def interrupted(self):
        """Whether the folder holds an interrupted run (a backup to resume)."""
        return self.backup.exists()

    def open(self, resume=False, overwrite=False):
        """Create the folder for a run; refuse to clobber an interrupted one.
        Returns ``self``."""
        if self.interrupted() and not (resume or overwrite):
            raise TrainingError(
                f"{self.path} holds an interrupted run (checkpoint in {self.backup}). "
                "Pass --resume to continue it or --overwrite to start over."
            )
        if overwrite and self.path.exists():
            shutil.rmtree(self.path)
        if resume and not self.interrupted():
            _log(f"--resume: no interrupted run in {self.path}; starting a new one.")
        self.checkpoint.parent.mkdir(parents=True, exist_ok=True)
        return self

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

    def write_result(self, record):
        """``result.json``, replaced whole (never half-written)."""
        tmp = self.result_path.with_name(f".{self.result_path.name}.tmp")
        tmp.write_text(json.dumps(record, indent=2, default=str))
        os.replace(tmp, self.result_path)


def prepare_output_dir(output_dir, resume=False, overwrite=False):
    """Create a run folder (``RunFolder.open``); returns its path."""
    return RunFolder(output_dir).open(resume, overwrite).path
