"""The Keras callbacks a run trains with besides the recipe's.

- ``AttentionImages``: a few fixed examples' attention maps, rendered by
  ``attention_images.render_maps``, logged to TensorBoard's IMAGES tab after
  every epoch; ``tensorboard_callbacks(model, data, log_dir)`` makes it (and
  the model graph) for a run's first validation texts: the trainer and every
  tuner trial use it.
- ``ClassifierCheckpoint``: the model with its preprocessor and class names
  (a ``TextClassifier``) saved after every epoch, so that an unfinished run
  can be exported.
- ``EpochHistory``: every epoch's logs in the run folder, so that a resumed
  run's history (and ``result.json``) holds the epochs before the
  interruption too.
- ``CleanInterrupt``: Ctrl-C stops training at the end of a batch, never
  inside a checkpoint's write, so the run can be resumed.
- ``SelectionState``: the recipe's early stopping / best-epoch selection
  (its best dev accuracy, best epoch, patience count and best weights) kept
  beside the backup, so that a resumed run selects over every epoch.
- ``RandomState`` (with ``replay_shuffles``): the layers' seed generators
  kept beside the backup and the data order replayed, so that a resumed run
  trains as the uninterrupted run would have.

Viewing the images: ``tensorboard --logdir <run>/logs``, IMAGES tab; the
step slider is the (0-based) epoch.
"""

import json
import os
import signal
import threading
from pathlib import Path

import keras
import numpy as np

from keras_posattn.training.run_folder import _write_npz


#: The images' tags start with this group (``maps/attention/fa2/example_0``).
#: TensorBoard's Time Series dashboard orders card groups by tag name, and
#: Keras's scalars are ``epoch_*``: under ``maps`` the loss and accuracy
#: curves come first on the landing page, the images after them.
IMAGE_TAG_GROUP = "maps"


class AttentionImages(keras.callbacks.Callback):
    """Log attention heat-maps of a few fixed examples to TensorBoard.

    Args:
      log_dir: TensorBoard log directory; images go to
        ``os.path.join(log_dir, subdir)``.
      attention_fn: ``attention_fn(token_ids) -> dict[str, array]`` (e.g.
        ``model.attention_maps``); the maps as ``render_maps`` takes them.
      token_ids: int array ``(batch, n)`` (or ``(batch, sentences, words)``
        for hierarchical models) of fixed examples; only the first
        ``max_examples`` rows are passed to ``attention_fn``.
      tokens: list (one per example) of lists of the real token strings
        (one label per sentence for sentence-level maps).
      every_n_epochs: write after every ``every_n_epochs``-th epoch (epochs
        ``every_n_epochs - 1``, ``2 * every_n_epochs - 1``, ...); the last
        epoch is also written at train end if it was not already.
      max_examples: at most this many examples are rendered.
      subdir: sub-directory of ``log_dir`` for the event files.

    The summary step is the 0-based epoch index; each image's tag is
    ``IMAGE_TAG_GROUP/`` + its ``render_maps`` tag. ``write(step)`` can be
    called directly, outside ``fit``.
    """

    def __init__(self, log_dir, attention_fn, token_ids, tokens, every_n_epochs=1,
                 max_examples=3, subdir="attention"):
        super().__init__()
        if every_n_epochs < 1:
            raise ValueError("`every_n_epochs` must be >= 1.")
        self.log_dir = os.fspath(log_dir)
        self.subdir = subdir
        self.attention_fn = attention_fn
        self.token_ids = np.asarray(token_ids)
        if self.token_ids.ndim < 2:
            raise ValueError(f"`token_ids` must be (batch, n) or (batch, sentences, words), "
                             f"got {self.token_ids.shape}.")
        self.tokens = [list(t) for t in tokens]
        self.every_n_epochs = int(every_n_epochs)
        self.max_examples = int(max_examples)
        self._writer = None
        self._last_epoch = None
        self._last_written = None

    @property
    def images_dir(self):
        return os.path.join(self.log_dir, self.subdir)

    def close(self):
        """Flush and close the event file (a later write reopens one)."""
        if self._writer is not None:
            self._writer.flush()
            self._writer.close()
            self._writer = None

    def render(self):
        """Run ``attention_fn`` and return ``{tag: image}`` without writing."""
        from keras_posattn.training.attention_images import CARD_STYLE, render_maps

        k = max(0, min(self.max_examples, self.token_ids.shape[0], len(self.tokens)))
        if k == 0:
            return {}
        return render_maps(self.attention_fn(self.token_ids[:k]), self.tokens[:k], **CARD_STYLE)

    def write(self, step):
        """Render and write all images at ``step``; returns ``{tag: image}``."""
        import tensorflow as tf

        images = self.render()
        if self._writer is None:
            self._writer = tf.summary.create_file_writer(self.images_dir)
        with self._writer.as_default():
            for tag, img in images.items():
                tf.summary.image(f"{IMAGE_TAG_GROUP}/{tag}", img[None], step=int(step),
                                 max_outputs=1)
        self._writer.flush()
        self._last_written = int(step)
        return images

    def on_epoch_end(self, epoch, logs=None):
        self._last_epoch = int(epoch)
        if (epoch + 1) % self.every_n_epochs == 0:
            self.write(epoch)

    def on_train_end(self, logs=None):
        if self._last_epoch is not None and self._last_written != self._last_epoch:
            self.write(self._last_epoch)
        if self._writer is not None:
            self._writer.flush()


def tensorboard_callbacks(model, data, log_dir, count=3):
    """What a run writes to TensorBoard beside the scalars, for a training
    run and every tuner trial alike: ``AttentionImages`` of ``model``'s maps
    for the first ``count`` validation texts of ``data`` (a
    ``PreparedData``) and the model's graph (``tensorboard.ModelGraph``)."""
    from keras_posattn.training.tensorboard import ModelGraph

    ids, tokens = data.samples(count)
    return [AttentionImages(str(log_dir), model.attention_maps, ids, tokens),
            ModelGraph(log_dir, ids)]


class ClassifierCheckpoint(keras.callbacks.Callback):
    """Save the model with its preprocessor and class names (a
    ``TextClassifier``: raw strings in) after every epoch, so an unfinished
    run can be exported (``keras-posattn export <run folder>``)."""

    def __init__(self, preprocessor, label_names, path):
        super().__init__()
        self.preprocessor = preprocessor
        self.label_names = list(label_names)
        self.path = Path(path)

    def on_epoch_end(self, epoch, logs=None):
        from keras_posattn.models import TextClassifier

        TextClassifier(self.preprocessor, self.model, label_names=self.label_names,
                       name=f"{self.model.name}_text").save(self.path)


class EpochHistory(keras.callbacks.Callback):
    """Every epoch's logs, kept in a run folder's ``history.json`` (rewritten
    after each epoch), across resumes: Keras' own ``History`` holds only the
    epochs of one ``fit`` call.

    Args:
        folder: the run's ``RunFolder``.
        resume: keep the epochs already written (an interrupted run's).
    """

    def __init__(self, folder, resume=False):
        super().__init__()
        self.folder = folder
        self.epochs = folder.read_history() if resume else {}

    def on_epoch_end(self, epoch, logs=None):
        self.epochs = {k: v for k, v in self.epochs.items() if k < epoch}
        self.epochs[int(epoch)] = {k: float(v) for k, v in (logs or {}).items()
                                   if np.ndim(v) == 0}
        self.folder.write_history(self.epochs)

    def history(self):
        """``{metric: [value of each epoch, in order]}``, as ``History.history``."""
        names = []
        for logs in self.epochs.values():
            names += [n for n in logs if n not in names]
        return {n: [self.epochs[e][n] for e in sorted(self.epochs) if n in self.epochs[e]]
                for n in names}


class CleanInterrupt(keras.callbacks.Callback):
    """Ctrl-C (SIGINT) during ``fit`` stops training at the end of the batch
    (or epoch) it arrives in, by raising ``KeyboardInterrupt`` there: after
    the epoch's checkpoints are written, never inside one, so the run folder
    holds a resumable run. A second Ctrl-C interrupts at once.

    Use it as a context manager around ``fit`` (it installs its handler in the
    main thread and puts the previous one back)::

        with CleanInterrupt() as stop:
            model.fit(..., callbacks=[..., stop])   # last, after the checkpoints
    """

    def __init__(self):
        super().__init__()
        self.requested = False
        self._previous = None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGINT, self._request)
            # None: a handler not set from Python; Ctrl-C then interrupts as usual.
            self._previous = signal.default_int_handler if previous is None else previous
        return self

    def __exit__(self, *exc_info):
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None

    def _request(self, signum, frame):
        self.requested = True
        signal.signal(signal.SIGINT, self._previous)  # a second Ctrl-C: at once

    def _stop_if_requested(self):
        if self.requested:
            raise KeyboardInterrupt("stopped at the end of a batch")

    def on_train_batch_end(self, batch, logs=None):
        self._stop_if_requested()

    def on_epoch_end(self, epoch, logs=None):
        self._stop_if_requested()


class SelectionState(keras.callbacks.Callback):
    """Carries a ``keras.callbacks.EarlyStopping`` (the recipe's early
    stopping and best-epoch selection) across an interrupted run.

    Keras's ``BackupAndRestore`` restores the weights, the optimizer and the
    epoch, not other callbacks: a resumed run's ``EarlyStopping`` would start
    again from nothing, keep the best of the resumed epochs only and count
    its patience anew. After every epoch this callback writes the selection's
    best dev accuracy, best epoch and patience count to
    ``<directory>/selection.json`` and, when the epoch was the best so far,
    the weights to ``<directory>/selection_best.npz``; on ``resume`` it puts
    them back into the selection at the start of training. The directory is
    the run's backup folder, removed once the run has trained (``trainer.fit``).

    Place it after the ``EarlyStopping`` in the callback list (its
    ``on_train_begin`` resets the state this one restores).
    """

    STATE_FILE = "selection.json"
    WEIGHTS_FILE = "selection_best.npz"

    def __init__(self, selection, directory, resume=False):
        super().__init__()
        self.selection = selection
        self.directory = Path(directory)
        self.resume = resume

    def on_train_begin(self, logs=None):
        state_file = self.directory / self.STATE_FILE
        if not (self.resume and state_file.exists()):
            return
        state = json.loads(state_file.read_text(encoding="utf-8"))
        s = self.selection
        s.best, s.best_epoch, s.wait = state["best"], state["best_epoch"], state["wait"]
        weights_file = self.directory / self.WEIGHTS_FILE
        if s.restore_best_weights and weights_file.exists():
            with np.load(weights_file) as stored:
                s.best_weights = [stored[f"w{i}"] for i in range(len(stored.files))]

    def on_epoch_end(self, epoch, logs=None):
        s = self.selection
        if s.best is None:
            return
        from keras_posattn.training.run_folder import _write_json

        self.directory.mkdir(parents=True, exist_ok=True)
        if s.best_epoch == epoch and s.best_weights is not None:
            _write_npz(self.directory / self.WEIGHTS_FILE,
                       **{f"w{i}": w for i, w in enumerate(s.best_weights)})
        _write_json(self.directory / self.STATE_FILE,
                    {"epoch": int(epoch), "best": float(s.best),
                     "best_epoch": int(s.best_epoch), "wait": int(s.wait)})


class RandomState(keras.callbacks.Callback):
    """Carries the model's random streams across an interrupted run, so that a
    resumed run trains as the uninterrupted run would have (the same dropout
    masks; ``replay_shuffles`` gives it the same data order).

    Keras's ``BackupAndRestore`` saves the weights (``model.weights``), not
    the layers' seed generators (in ``model.variables`` only): a resumed run
    would draw its dropout masks again from the start. After every epoch this
    callback writes those states to ``<directory>/random_state.npz``; on
    ``resume`` it puts them back at the start of training when they were
    written at the epoch the run resumes from. The directory is the run's
    backup folder, removed once the run has trained (``trainer.fit``).
    """

    FILE = "random_state.npz"

    def __init__(self, directory, resume=False):
        super().__init__()
        self.directory = Path(directory)
        self.resume = resume

    def _states(self):
        saved = {id(v) for v in self.model.weights}
        return [v for v in self.model.variables if id(v) not in saved]

    def on_train_begin(self, logs=None):
        path = self.directory / self.FILE
        if not (self.resume and path.exists()):
            return
        from keras_posattn.training.run_folder import RunFolder
        from keras_posattn.training.run_folder import _log

        states = self._states()
        with np.load(path) as stored:
            epochs = int(stored["epochs"])
            values = [stored[f"s{i}"] for i in range(len(stored.files) - 1)]
        if epochs != RunFolder(self.directory.parent).resumed_epoch() or len(values) != len(states):
            _log("Resume: the random streams were not saved with the last epoch; "
                 "dropout draws anew from here.")
            return
        for variable, value in zip(states, values):
            variable.assign(value)

    def on_epoch_end(self, epoch, logs=None):
        self.directory.mkdir(parents=True, exist_ok=True)
        _write_npz(self.directory / self.FILE, epochs=np.int64(epoch + 1),
                   **{f"s{i}": keras.ops.convert_to_numpy(v.value)
                      for i, v in enumerate(self._states())})


def iterators_per_epoch(version=None):
    """Iterators Keras's ``fit`` makes, in each epoch, of a training set whose
    number of batches it knows (``assert_cardinality``): from Keras 3.7 two,
    the epoch's own and one it makes ready at the epoch's end and replaces at
    the next start; Keras 3.6 makes one. ``version`` defaults to the installed
    Keras's."""
    major, minor = (int(part) for part in (version or keras.version()).split(".")[:2])
    return 1 if (major, minor) < (3, 7) else 2


def replay_shuffles(dataset, epochs):
    """Draw the shuffle orders ``epochs`` finished epochs of ``fit`` drew from
    ``dataset``, so that the next epoch sees the order the uninterrupted run's
    epoch ``epochs`` saw. ``tf.data`` draws a new order each time an iterator
    is made (``reshuffle_each_iteration``), from a sequence that starts afresh
    with every new dataset: without this a resumed run would train its
    remaining epochs on the first epochs' orders. The iterators are made and
    dropped; the data is not read. Call it before ``fit``."""
    for _ in range(iterators_per_epoch() * int(epochs)):
        iter(dataset)
