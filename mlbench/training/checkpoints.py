"""Checkpoints of a run: where they live, the newest one, and saving only finite state.

A checkpoint is what a restart trusts (resume, preemption, Ctrl-C), so a state
holding NaN/Inf anywhere — weights, batch-norm statistics, optimizer slots — is
never saved: the run stops as diverged instead, and the last good one stays.
"""
import contextlib
import errno
import glob
import json
import math
import os
import re
import shutil

import tensorflow as tf

from mlbench.files import write_json
from mlbench.training.callbacks import Callback

FOLDER = "checkpoints"
BEST = "best"  # checkpoints/best: the best eval's checkpoint (`keep_best`) and best.json
KEEP = 3


def directory(model_dir):
    return os.path.join(model_dir, FOLDER)


def latest_checkpoint(model_dir):
    """The newest checkpoint under `model_dir/checkpoints`, or None."""
    if not model_dir:
        return None
    return tf.train.latest_checkpoint(directory(model_dir))


def best_checkpoint(model_dir):
    """The kept best checkpoint of `model_dir` (`keep_best`), or None."""
    return tf.train.latest_checkpoint(os.path.join(directory(model_dir), BEST))


def manager(checkpoint, model_dir):
    """A CheckpointManager keeping the newest KEEP checkpoints of `model_dir`."""
    return tf.train.CheckpointManager(checkpoint, directory(model_dir), max_to_keep=KEEP)


class DiskFullError(RuntimeError):
    """A checkpoint or result.json write found no space left; the run stopped, resumable."""

    def __init__(self, folder, what, last_good):
        free = shutil.disk_usage(folder) if os.path.isdir(folder) else None
        space = (f"{_mb(free.free)} free of {_mb(free.total)}" if free else "no space")
        where = (f"the last good checkpoint is {last_good} (step "
                 f"{_step_of(last_good)}): free space and run the same command to resume "
                 "from it" if last_good else "no checkpoint was saved before it: free space "
                 "and run the same command to start again")
        super().__init__(f"the disk is full: {what} in {folder} failed ({space}); {where}.")
        self.errno = errno.ENOSPC
        self.folder, self.last_good = folder, last_good
        self.free_bytes = free.free if free else None


def _mb(n):
    return f"{n / 2 ** 20:.1f} MB"


def _step_of(path):
    found = re.search(r"-(\d+)$", path or "")
    return int(found.group(1)) if found else None


def is_disk_full(error):
    """TF's raw op error or Python's OSError for 'No space left on device'."""
    return (getattr(error, "errno", None) == errno.ENOSPC or
            "No space left on device" in str(error))


def remove_half_written(folder):
    """Removes the `*_temp` folders a failed save leaves (TF renames them when done)."""
    for path in glob.glob(os.path.join(folder, "*_temp")):
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def disk_full_named(folder, what, last_good=None):
    """A 'No space left on device' inside becomes a DiskFullError naming `folder`, its free
    space and the last good checkpoint, after the half-written save is removed."""
    try:
        yield
    except (tf.errors.OpError, OSError) as e:
        if isinstance(e, DiskFullError) or not is_disk_full(e):
            raise
        remove_half_written(folder)
        raise DiskFullError(folder, what, last_good() if callable(last_good) else last_good) \
            from e


def all_finite(variables):
    """True when every floating-point variable holds only finite values."""
    state = [v for v in variables if tf.as_dtype(v.dtype).is_floating]  # Keras 3: a str
    return bool(tf.reduce_all([tf.reduce_all(tf.math.is_finite(v)) for v in state]))


def save_finite(checkpoint_manager, variables, step):
    """Saves at `step` if `variables` are finite; returns whether it saved."""
    if not all_finite(variables):
        return False
    folder = checkpoint_manager.directory
    with disk_full_named(folder, f"saving checkpoint ckpt-{step}",
                         lambda: tf.train.latest_checkpoint(folder)):
        checkpoint_manager.save(checkpoint_number=step)
    return True


class KeepBest(Callback):
    """Keeps the checkpoint of the best eval by one metric in `checkpoints/best` (one
    checkpoint, named by its step) with `best.json` (metric, mode, value, step), beside
    the last KEEP ones. A resumed run reads best.json and keeps improving on it."""

    def __init__(self, checkpoint, model_dir, keep_best, state_variables):
        (self.metric, self.mode), = keep_best.items()
        self.folder = os.path.join(directory(model_dir), BEST)
        self.manager = tf.train.CheckpointManager(checkpoint, self.folder, max_to_keep=1)
        self.state_variables = state_variables
        self.record = os.path.join(self.folder, "best.json")
        self.best = None
        if os.path.exists(self.record):
            with open(self.record) as f:
                self.best = json.load(f)["value"]

    def _better(self, value):
        if not math.isfinite(value):
            return False
        if self.best is None:
            return True
        return value > self.best if self.mode == "max" else value < self.best

    def on_eval_stop(self, step, metrics):
        value = metrics[self.metric]
        if self._better(value) and save_finite(self.manager, self.state_variables(), step):
            self.best = value
            write_json(self.record, {"metric": self.metric, "mode": self.mode,
                                     "value": value, "step": step}, indent=1)
