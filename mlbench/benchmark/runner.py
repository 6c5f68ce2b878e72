"""Timing one configuration the tf_cnn_benchmarks way, through mlbench's own step.

Warm-up steps (and the trace/compile in the first of them) run first and
never enter the statistics; then every timed step is run and synchronised on
its own, so per-step times are real; the whole is repeated `num_runs` times
on the same model (as the page averaged 5 runs).
"""
import time

import tensorflow as tf

from mlbench import models, optimizers
from mlbench import precision as precision_lib
from mlbench.benchmark import stats
from mlbench.training import task as task_lib
from mlbench.training.step import TrainStep


class ForwardStep:
    """Forward-only (inference) timing: the model on the batch, no gradients."""

    def __init__(self, strategy, model, task):
        self.strategy, self.model, self.task = strategy, model, task
        self.loss_scaled = False
        self.train_loop = tf.function(self._loop)

    def _replica(self, batch):
        outputs = self.model(self.task.inputs(batch), training=False)
        return tf.reduce_mean(tf.cast(tf.nest.flatten(outputs)[0], tf.float32))

    def _loop(self, inputs, num_steps):
        total = tf.constant(0.0)
        for _ in tf.range(num_steps):
            batch = next(inputs) if hasattr(inputs, "get_next") else inputs
            value = self.strategy.run(self._replica, args=(batch,))
            total += self.strategy.reduce(tf.distribute.ReduceOp.SUM, value, axis=None)
        return total, tf.constant(0, tf.int64)


def build_step(strategy, model_name, source, policy, jit, global_batch, forward_only,
               learning_rate=0.005):
    """Model + SGD + the training (or forward) step under `strategy`."""
    info = models.info(model_name)
    with strategy.scope():
        with precision_lib.policy_scope(policy):
            model = models.get(model_name, num_classes=max(source.num_classes, 1),
                               **_image_size(info, source))
        optimizer, _ = optimizers.build("sgd", learning_rate, momentum=0.9)
        optimizer = precision_lib.wrap_optimizer(optimizer, policy)
    task = task_lib.for_model(info.kind, source.num_classes)
    if forward_only:
        return ForwardStep(strategy, model, task)
    return TrainStep(strategy, model, optimizer, task, global_batch, 1, jit)


def _image_size(info, source):
    """Real data smaller than the model's default input (tests) sets the model's size."""
    if info.kind != "image" or source.input_shape == info.input_shape:
        return {}
    return {"image_size": source.input_shape[0]}


def inputs_for(strategy, source, per_device_batch, seed=0):
    if source.on_device:
        return source.distribute(strategy, per_device_batch, seed)
    return iter(strategy.distribute_datasets_from_function(
        lambda ctx: source.train_dataset(ctx, per_device_batch, seed)))


def time_steps(step, inputs, num_steps, clock):
    """Durations of `num_steps` steps, each run and synchronised on its own."""
    one = tf.constant(1, tf.int32)
    times = []
    for _ in range(num_steps):
        start = clock()
        loss, _ = step.train_loop(inputs, one)
        float(loss)  # waits for the devices
        times.append(clock() - start)
    return times


def run_once(step, inputs, num_warmup, num_batches, images_per_step, clock=time.perf_counter,
             log=print, log_every=10):
    """One run: warm-up (excluded), then `num_batches` timed steps → RunStats."""
    warm_start = clock()
    time_steps(step, inputs, num_warmup, clock)
    warmup_s = clock() - warm_start
    times, wall_start = [], clock()
    for done in range(0, num_batches, log_every):
        chunk = time_steps(step, inputs, min(log_every, num_batches - done), clock)
        times.extend(chunk)
        partial = stats.run_stats(times, images_per_step)
        log(f"{done + len(chunk)}\t{partial.line()}")
    result = stats.run_stats(times, images_per_step, wall_time=clock() - wall_start)
    return result, warmup_s
