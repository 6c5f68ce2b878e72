"""Precision and XLA choices: resolves `precision` and `jit_compile` ('auto' → concrete).

This module decides *whether* to compile; `training/step.py` (`TrainStep._compile`) is
the one function that applies it.

`auto` picks per platform because the right answer flips between CPU and GPU
(measured, docs/benchmarks.md): on AMX/AVX512-BF16 CPUs bf16 is ~1.5-1.9x faster than
float32 and XLA is ~20x *slower* than oneDNN graph mode; on GPUs XLA and
fp16/bf16 are the big wins.
"""
import contextlib

import tensorflow as tf
import tf_keras as keras

from mlbench.models import keras3
from mlbench.machine import cpu_flags

PRECISIONS = ("float32", "mixed_float16", "mixed_bfloat16")


def cpu_has_fast_bf16():
    return bool({"amx_bf16", "avx512_bf16"} & cpu_flags())


def _gpu_compute_capabilities():
    caps = []
    for gpu in tf.config.list_physical_devices("GPU"):
        details = tf.config.experimental.get_device_details(gpu)
        caps.append(details.get("compute_capability", (0, 0)))
    return caps


def accelerator_kind():
    """'tpu', 'gpu' or 'cpu': what the default strategy would run on.

    Physical listings only: logical ones would initialise TF's context, after
    which MultiWorkerMirroredStrategy can no longer configure collectives.
    """
    if tf.config.list_physical_devices("TPU"):
        return "tpu"
    if tf.config.list_physical_devices("GPU"):
        return "gpu"
    return "cpu"


def resolve_precision(precision):
    """Maps `precision` (a name or 'auto') to a tf_keras policy name.

    Raises:
      ValueError: if `precision` is not 'auto' or one of PRECISIONS.
    """
    if precision != "auto" and precision not in PRECISIONS:
        raise ValueError(
            f"`precision` ({precision!r}) must be 'auto' or one of {list(PRECISIONS)}.")
    if precision != "auto":
        return precision
    kind = accelerator_kind()
    if kind == "tpu":
        return "mixed_bfloat16"
    if kind == "gpu":
        caps = _gpu_compute_capabilities()
        return "mixed_bfloat16" if caps and min(caps) >= (8, 0) else "mixed_float16"
    return "mixed_bfloat16" if cpu_has_fast_bf16() else "float32"


def resolve_jit_compile(jit_compile):
    """Maps `jit_compile` (True, False or 'auto') to a bool: XLA on GPU/TPU only."""
    if jit_compile == "auto":
        return accelerator_kind() != "cpu"
    if isinstance(jit_compile, bool):
        return jit_compile
    raise ValueError(f"`jit_compile` ({jit_compile!r}) must be True, False or 'auto'.")


@contextlib.contextmanager
def policy_scope(policy_name):
    """Sets the global dtype policy while models are built, then restores it.

    Layers read the global policy when constructed, so model factories must
    run inside this scope; restoring keeps a second `train()` in the same
    process (or the user's own Keras code) unaffected. tf_keras and Keras 3 each
    have their own global policy: both are set (Keras 3's only if it is loaded).
    """
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(policy_name)
    previous_keras3 = keras3.set_global_policy(policy_name)
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(previous)
        if previous_keras3 is not None:
            keras3.set_global_policy(previous_keras3)


def wrap_optimizer(optimizer, policy_name, initial_scale=2.0 ** 15):
    """Wraps the optimizer in a dynamic loss scale for float16 (its own generation's
    LossScaleOptimizer); bf16 needs none."""
    if policy_name != "mixed_float16":
        return optimizer
    if keras3.is_optimizer(optimizer):
        return keras3.loaded().optimizers.LossScaleOptimizer(optimizer,
                                                              initial_scale=initial_scale)
    return keras.mixed_precision.LossScaleOptimizer(optimizer, dynamic=True,
                                                    initial_scale=initial_scale)


def uses_loss_scale(optimizer):
    return isinstance(optimizer, keras.mixed_precision.LossScaleOptimizer) or (
        keras3.is_optimizer(optimizer) and
        isinstance(optimizer, keras3.loaded().optimizers.LossScaleOptimizer))


def scaled_loss(optimizer, loss):
    """The loss times the dynamic scale (float16), for the tape."""
    if keras3.is_optimizer(optimizer):
        return optimizer.scale_loss(loss)
    return optimizer.get_scaled_loss(loss)


def unscaled_gradients(optimizer, gradients):
    """tf_keras gradients of the scaled loss, divided by the scale. Keras 3's
    LossScaleOptimizer divides in `apply_gradients` itself, so they stay scaled."""
    if keras3.is_optimizer(optimizer):
        return gradients
    return optimizer.get_unscaled_gradients(gradients)


def agree_on_overflow(optimizer, gradients):
    """Replica gradients that overflow together (in a replica context).

    Keras 3's LossScaleOptimizer decides to skip a step from the first replica's gradients
    only (it assumes they were all-reduced already; they are reduced later, inside the
    inner optimizer), so an overflow on another replica would be applied as inf. Here the
    replicas agree first: if any replica's gradients are not finite, every replica's
    become NaN, and the step is skipped everywhere. tf_keras' checks every replica itself.
    """
    if not keras3.is_optimizer(optimizer):
        return gradients
    finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in gradients])
    overflowed = tf.distribute.get_replica_context().all_reduce(  # replicas that overflowed
        tf.distribute.ReduceOp.SUM, 1.0 - tf.cast(finite, tf.float32))
    return [tf.where(overflowed > 0, tf.fill(tf.shape(g), float("nan")), g)
            for g in gradients]


def loss_scale(optimizer):
    """The current dynamic loss scale (a tensor) of a loss-scaled optimizer."""
    if keras3.is_optimizer(optimizer):
        return tf.convert_to_tensor(optimizer.dynamic_scale)
    return optimizer.loss_scale


def counts_skipped_steps(optimizer):
    """tf_keras' LossScaleOptimizer counts a skipped update in `iterations`; Keras 3's does
    not, so the step adds it (one step = one update attempt for both generations: the LR
    schedule, checkpoints and the data read stay in one unit)."""
    return not keras3.is_optimizer(optimizer)
