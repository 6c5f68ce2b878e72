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
from mlbench.training.matching import CheckpointMismatch

FOLDER = "checkpoints"
BEST = "best"  # checkpoints/best: the best eval's checkpoint (`keep_best`) and best.json
KEEP = 3


def directory(model_dir):
    return os.path.join(model_dir, FOLDER)


def latest_checkpoint(model_dir):
    """The newest checkpoint under `model_dir/checkpoints`, or None: the one the state file
    names, or, when that file is missing or damaged, the newest checkpoint file."""
    if not model_dir:
        return None
    folder = directory(model_dir)
    try:
        named = tf.train.latest_checkpoint(folder)
    except Exception:  # a garbled state file: TF's text-proto parser raises its own errors
        named = None
    steps = [] if named else steps_on_disk(folder)
    return named or (os.path.join(folder, f"ckpt-{steps[-1]}") if steps else None)


def best_checkpoint(model_dir):
    """The kept best checkpoint of `model_dir` (`keep_best`), or None."""
    return tf.train.latest_checkpoint(os.path.join(directory(model_dir), BEST))


def manager(checkpoint, model_dir):
    """A CheckpointManager keeping the newest KEEP checkpoints of `model_dir`."""
    return tf.train.CheckpointManager(checkpoint, directory(model_dir), max_to_keep=KEEP)


class DiskFullError(RuntimeError):
    """A checkpoint or result.json write found no space left; the run stopped, resumable."""

    def __init__(self, folder, what, last_good, advice=None):
        free = shutil.disk_usage(folder) if os.path.isdir(folder) else None
        space = (f"{_mb(free.free)} free of {_mb(free.total)}" if free else "no space")
        where = advice or (
            f"the last good checkpoint is {last_good} (step {_step_of(last_good)}): free "
            "space and run the same command to resume from it" if last_good else
            "no checkpoint was saved before it: free space and run the same command to "
            "start again")
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
    """Removes the `*_temp` folders a failed or killed save leaves (TF renames them when
    done); returns their paths."""
    found = glob.glob(os.path.join(folder, "*_temp"))
    for path in found:
        shutil.rmtree(path, ignore_errors=True)
    return found


# --- a run's checkpoints, whatever happened to their bookkeeping ----------------------
# TF's CheckpointManager trusts its state file (`checkpoints/checkpoint`): without it a
# run restarts at step 1 and its `max_to_keep` deletes the older run's files. The files
# themselves say which steps exist; the state file is rewritten from them.

SET_ASIDE = "set_aside"  # checkpoints that failed to restore, kept for inspection


def steps_on_disk(folder):
    """The steps of the complete checkpoints in `folder` (an index file each), oldest first."""
    steps = []
    for path in glob.glob(os.path.join(folder, "ckpt-*.index")):
        found = re.fullmatch(r"ckpt-(\d+)\.index", os.path.basename(path))
        if found:
            steps.append(int(found.group(1)))
    return sorted(steps)


def _state_is_sound(folder):
    try:
        state = tf.train.get_checkpoint_state(folder)
    except Exception:  # a garbled state file: TF's text-proto parser raises its own errors
        return False
    return state is not None and tf.io.gfile.exists(state.model_checkpoint_path + ".index")


def _rewrite_state(folder, steps):
    state = os.path.join(folder, "checkpoint")
    if not steps:
        if os.path.exists(state):
            os.remove(state)
        return
    paths = [os.path.join(folder, f"ckpt-{step}") for step in steps]
    tf.compat.v1.train.update_checkpoint_state(folder, paths[-1],
                                               all_model_checkpoint_paths=paths)


def recover(model_dir, log):
    """Before a run resumes (the chief only): removes half-written `*_temp` folders, and
    rewrites a missing or damaged state file from the checkpoint files, saying so."""
    folder = directory(model_dir)
    if not os.path.isdir(folder):
        return
    removed = remove_half_written(folder)
    if removed:
        log(f"removed {len(removed)} half-written checkpoint folder(s) a killed save left: "
            f"{', '.join(sorted(os.path.basename(p) for p in removed))}")
    steps = steps_on_disk(folder)
    if steps and not _state_is_sound(folder):
        _rewrite_state(folder, steps)
        log(f"the checkpoint state file {os.path.join(folder, 'checkpoint')} was missing or "
            f"damaged; rewrote it from the checkpoint files (steps {steps}): resuming from "
            f"ckpt-{steps[-1]}")


def verify(path):
    """Reads every tensor of the checkpoint at `path` (its index and data, with their
    checksums); raises TF's error when any part is truncated or corrupt."""
    reader = tf.train.load_checkpoint(path)
    for name in reader.get_variable_to_shape_map():
        reader.get_tensor(name)


UNREADABLE = (tf.errors.OpError, IndexError, ValueError, OSError)


def restore_newest_intact(model_dir, restore, log, set_aside=True):
    """Restores (`restore(path)`) the newest checkpoint that reads back whole; a newer one
    that fails is named with its error and, when `set_aside` (a run, not a reader), moved
    to `checkpoints/set_aside/` (never deleted). Returns the path restored, or None."""
    folder = directory(model_dir)
    candidates = [os.path.join(folder, f"ckpt-{s}") for s in reversed(steps_on_disk(folder))]
    for path in candidates:
        try:
            verify(path)
            restore(path)
            return path
        except CheckpointMismatch:
            raise  # whole and readable, but another run's: refused, never set aside
        except UNREADABLE as e:
            what = f"checkpoint {path} cannot be restored ({type(e).__name__}: " \
                   f"{str(e).splitlines()[0][:200] if str(e) else ''})"
            if set_aside:
                aside = _set_aside(path)
                _rewrite_state(folder, steps_on_disk(folder))
                log(f"{what}; moved its files to {aside} and restoring the previous one")
            else:
                log(f"{what}; using the previous one")
    return None


def _set_aside(path):
    aside = os.path.join(os.path.dirname(path), SET_ASIDE)
    os.makedirs(aside, exist_ok=True)
    for part in glob.glob(glob.escape(path) + ".*"):
        shutil.move(part, os.path.join(aside, os.path.basename(part)))
    return aside


@contextlib.contextmanager
def disk_full_named(folder, what, last_good=None, advice=None):
    """A 'No space left on device' inside becomes a DiskFullError naming `folder`, its free
    space and the last good checkpoint (or `advice`: the way back for what failed), after
    the half-written save is removed."""
    try:
        yield
    except (tf.errors.OpError, OSError) as e:
        if isinstance(e, DiskFullError) or not is_disk_full(e):
            raise
        remove_half_written(folder)
        raise DiskFullError(folder, what, last_good() if callable(last_good) else last_good,
                            advice) from e


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
