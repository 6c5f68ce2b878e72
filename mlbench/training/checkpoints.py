"""Checkpoints of a run: where they live, the newest one, and saving only finite state.

A checkpoint is what a restart trusts (resume, preemption, Ctrl-C), so a state
holding NaN/Inf anywhere — weights, batch-norm statistics, optimizer slots — is
never saved: the run stops as diverged instead, and the last good one stays.
"""
import os

import tensorflow as tf

FOLDER = "checkpoints"
KEEP = 3


def directory(model_dir):
    return os.path.join(model_dir, FOLDER)


def latest_checkpoint(model_dir):
    """The newest checkpoint under `model_dir/checkpoints`, or None."""
    if not model_dir:
        return None
    return tf.train.latest_checkpoint(directory(model_dir))


def manager(checkpoint, model_dir):
    """A CheckpointManager keeping the newest KEEP checkpoints of `model_dir`."""
    return tf.train.CheckpointManager(checkpoint, directory(model_dir), max_to_keep=KEEP)


def all_finite(variables):
    """True when every floating-point variable holds only finite values."""
    state = [v for v in variables if tf.as_dtype(v.dtype).is_floating]  # Keras 3: a str
    return bool(tf.reduce_all([tf.reduce_all(tf.math.is_finite(v)) for v in state]))


def save_finite(checkpoint_manager, variables, step):
    """Saves at `step` if `variables` are finite; returns whether it saved."""
    if not all_finite(variables):
        return False
    checkpoint_manager.save(checkpoint_number=step)
    return True
