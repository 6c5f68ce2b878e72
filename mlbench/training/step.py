"""The compiled, distributed training step (with gradient accumulation) and eval step.

Only this module decides compilation (one place decides it, as orbit's loop_fns): the per-replica
gradient computation is `tf.function(jit_compile=...)`; the loop of
`steps_per_loop` steps runs inside one `tf.function` over a tensor count.
"""
import logging
import time
from typing import NamedTuple, Optional

import tensorflow as tf

from mlbench.training.optimizers import current_learning_rate, optimizer_variables
from mlbench.models import precision


def split_microbatches(batch, k):
    """Splits every tensor of `batch` along axis 0 into k equal micro-batches."""
    if k == 1:
        return [batch]
    flat = tf.nest.flatten(batch)
    pieces = [tf.split(t, k) for t in flat]
    return [tf.nest.pack_sequence_as(batch, [p[i] for p in pieces]) for i in range(k)]


def input_signature(inputs):
    """'float32[8, 4], int32[8]': the shapes and dtypes the step is traced for (a
    distributed iterator's element spec, or per-replica tensors)."""
    spec = getattr(inputs, "element_spec", None)
    parts = tf.nest.flatten(spec if spec is not None else inputs, expand_composites=True)
    return ", ".join(f"{p.dtype.name}{list(p.shape)}" for p in parts
                     if hasattr(p, "shape") and hasattr(p, "dtype"))


def first_line(error):
    return ((getattr(error, "message", None) or str(error)).strip().splitlines() or [""])[0]


class StepOutcome(NamedTuple):
    """What `TrainStep.run` tells the loop about the steps it ran (read on the host, so
    returning means the devices finished them)."""
    loss: float  # mean over the steps
    skipped_steps: int  # updates float16 loss scaling skipped
    learning_rate: float  # after the last step
    loss_scale: Optional[float]  # the dynamic loss scale (float16), else None


class TrainStep:
    """One optimizer update per step from k micro-batches per replica (or, in
    'forward' mode, one forward pass: benchmark mode's inference timing).

    `run` is the only way into compiled code: warm-up, training and benchmark
    timing all enter there, so the XLA fallback covers them all and
    `jit_compile` always says what ran.

    Args:
      strategy: the tf.distribute strategy the model and optimizer were built under.
      model / optimizer / task: the parts; `task` owns inputs and per-example loss.
      global_batch_size: examples per step over all replicas and micro-batches.
      gradient_accumulation_steps: k; the per-replica batch is split into k
        micro-batches whose float32 gradients are summed before one update.
      jit_compile: compile the per-replica computation with XLA.
      mode: 'train' or 'forward'.
      log: where the XLA fallback message goes (a `logging` call by default).
      coordinator: a ClusterCoordinator (parameter servers): steps are scheduled on the
        workers one step per closure, so a closure re-run on another worker after a
        worker failure repeats at most that one step, and the step count stays exact.
    """

    def __init__(self, strategy, model, optimizer, task, global_batch_size,
                 gradient_accumulation_steps=1, jit_compile=False, mode="train", log=None,
                 coordinator=None):
        if mode not in ("train", "forward"):
            raise ValueError(f"`mode` ({mode!r}) must be 'train' or 'forward'.")
        self.strategy, self.model, self.optimizer, self.task = strategy, model, optimizer, task
        self.global_batch_size = global_batch_size
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.loss_scaled = precision.uses_loss_scale(optimizer) if optimizer is not None else False
        self.mode, self.coordinator = mode, coordinator
        # a task with metrics (your own model's) computes them on the training batches
        # too, as fit logs them; not under parameter servers, whose closures may re-run
        self.train_metrics = (mode == "train" and coordinator is None and
                              hasattr(task, "update_train_metrics"))
        self.log = log or logging.getLogger("mlbench").warning
        self.steps_run = 0  # calls' steps, forward mode included (no optimizer counts them)
        # the optimizer's updates before this run (your model's own optimizer, trained by
        # an earlier fit): the run counts its own steps from 0 above them
        self.step_offset = 0
        # Every trace of the step: {'step', 'inputs', 'seconds' (of the call that traced:
        # trace, compile and its steps), 'cause'}; read by the compile diagnosis.
        self.traces = []
        self.xla_fallback = None  # why XLA refused the step, when it did
        self._traced_inputs, self._trace_s = None, None
        self._compile(jit_compile)
        # Eval is not XLA-compiled: under MirroredStrategy a jit-compiled eval
        # function read replica 0's variables from replica 1 (TF 2.20), and
        # eval time is outside every timed window anyway.
        eval_fn = self._eval_step if coordinator is None else self._replica_eval_fn
        self.eval_step = tf.function(eval_fn, reduce_retracing=True)

    def _compile(self, jit_compile):
        """The one place that decides compilation."""
        self.jit_compile = jit_compile
        replica_fn = self._replica_gradients if self.mode == "train" else self._replica_forward
        self.replica_fn = tf.function(replica_fn, jit_compile=jit_compile)
        self._loop = tf.function(self._train_loop)

    def recompile(self, jit_compile):
        """New traces of the step (the numerics replay instruments them with checks)."""
        self._compile(jit_compile)

    def _replica_gradients(self, batch):
        variables = self.model.trainable_variables
        grads, total_loss = None, tf.constant(0.0)
        for micro in split_microbatches(batch, self.gradient_accumulation_steps):
            with tf.GradientTape() as tape:
                outputs = self.model(self.task.inputs(micro), training=True)
                per_example = self.task.per_example_loss(micro, outputs)
                if self.train_metrics:
                    self.task.update_train_metrics(micro, outputs)
                loss = tf.nn.compute_average_loss(per_example,
                                                  global_batch_size=self.global_batch_size)
                loss = loss + self._regularization_loss()
                scaled = precision.scaled_loss(self.optimizer, loss) if self.loss_scaled \
                    else loss
            g = tape.gradient(scaled, variables)
            if self.loss_scaled:
                g = precision.unscaled_gradients(self.optimizer, g)
            # None = a variable this loss does not reach (e.g. BERT's pooler
            # when the next-sentence head reads the [CLS] token): zero gradient.
            g = [tf.zeros_like(v) if b is None else tf.cast(b, tf.float32)
                 for v, b in zip(variables, g)]
            # The first micro-batch's gradients start the sum: no add of zeros per
            # variable per step when there is one micro-batch.
            grads = g if grads is None else [a + b for a, b in zip(grads, g)]
            total_loss += loss
        return grads, total_loss

    def _replica_forward(self, batch):
        """Inference: the model on the batch, no gradients; returns the sum of every
        output's mean. Every output: TensorFlow prunes what the returned value does not
        depend on, and a BERT pretrainer's first output (sorted keys) is its first
        encoder layer's, so the mean of it alone timed 1 of 12 layers (12x too fast)."""
        outputs = self.model(self.task.inputs(batch), training=False)
        return tf.add_n([tf.reduce_mean(tf.cast(t, tf.float32))
                         for t in tf.nest.flatten(outputs)])

    def _regularization_loss(self):
        """Model regularizers, split evenly over replicas and micro-batches."""
        if not self.model.losses:
            return 0.0
        share = self.strategy.num_replicas_in_sync * self.gradient_accumulation_steps
        return tf.add_n([tf.cast(x, tf.float32) for x in self.model.losses]) / share

    def run(self, inputs, num_steps):
        """Runs `num_steps` steps and returns their StepOutcome.

        Falls back to the uncompiled step if XLA refuses it: XLA fails on some
        ops and under some multi-worker set-ups, and the compile error surfaces
        on the first call, before any update is applied. `jit_compile` then
        records what really ran.
        """
        if self.coordinator is not None:
            return self._outcome(*self._run_scheduled(inputs, num_steps))
        count = tf.constant(num_steps, tf.int32)
        start, self._traced_inputs = time.perf_counter(), None
        try:
            result = self._loop(inputs, count)
        except (tf.errors.InvalidArgumentError, tf.errors.UnimplementedError,
                tf.errors.InternalError) as e:
            if not self.jit_compile or "XLA" not in str(e) and "jit" not in str(e).lower():
                raise
            self.log(f"XLA could not compile the step; running it uncompiled "
                     f"({type(e).__name__}).")
            self.xla_fallback = f"{type(e).__name__}: {first_line(e)}"
            self._compile(False)
            result = self._loop(inputs, count)
        self.steps_run += int(num_steps)
        self._note_trace(num_steps, time.perf_counter() - start)
        return self._outcome(*result)

    def _note_trace(self, num_steps, seconds):
        """Records the call that traced the step (the loop's body ran in Python), with
        what differs from the previous trace's inputs: the cause of a retrace. Reads the
        step count only then: nothing is added to a call that did not trace."""
        if self._traced_inputs is None:
            return
        step = self.global_step - num_steps  # where the call began
        previous = self.traces[-1]["inputs"] if self.traces else None
        if previous is None:
            cause = "first call"
        elif previous != self._traced_inputs:
            cause = f"input changed from {previous} to {self._traced_inputs}"
        else:
            cause = ("same input shapes: a Python value or object passed to the step "
                     "changed")
        self.traces.append({"step": step, "inputs": self._traced_inputs,
                            "seconds": seconds, "trace_s": self._trace_s, "cause": cause})

    def _outcome(self, loss, skipped):
        return StepOutcome(float(loss), int(skipped), self._learning_rate(), self._loss_scale())

    def _run_scheduled(self, inputs, num_steps):
        """Parameter servers: `num_steps` one-step closures on the workers, then join."""
        one = tf.constant(1, tf.int32)
        values = [self.coordinator.schedule(self._loop, args=(inputs, one))
                  for _ in range(num_steps)]
        self.coordinator.join()
        results = [v.fetch() for v in values]
        self.steps_run += int(num_steps)
        return (sum(float(r[0]) for r in results) / num_steps,
                sum(int(r[1]) for r in results))

    def _replica_step(self, batch):
        if self.mode == "forward":
            return self.replica_fn(batch)
        grads, loss = self.replica_fn(batch)
        if self.loss_scaled and self.strategy.num_replicas_in_sync > 1:
            grads = precision.agree_on_overflow(self.optimizer, grads)
        if self.model.trainable_variables:
            self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))
        else:  # nothing to update (Keras' train_step skips the optimizer); the step counts
            self.optimizer.iterations.assign_add(1)
        return loss

    def _train_loop(self, inputs, num_steps):
        """`num_steps` steps in one tf.function; (mean loss, fp16 skipped steps).

        `inputs` is a distributed iterator, or per-replica values already on
        the devices (synthetic data), reused every step. The Python here runs only
        while tracing: it records what the step is traced for and how long that took.
        """
        begun = time.perf_counter()
        self._traced_inputs = input_signature(inputs)
        outputs = self._train_steps(inputs, num_steps)
        self._trace_s = time.perf_counter() - begun
        return outputs

    def _train_steps(self, inputs, num_steps):
        total_loss = tf.constant(0.0)
        skipped = tf.constant(0, tf.int64)
        for _ in tf.range(num_steps):
            batch = next(inputs) if hasattr(inputs, "get_next") else inputs
            scale_before = precision.loss_scale(self.optimizer) if self.loss_scaled else 0.0
            per_replica = self.strategy.run(self._replica_step, args=(batch,))
            total_loss += self.strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)
            if self.loss_scaled:  # a dynamic scale drops only when it skipped the step
                dropped = tf.cast(precision.loss_scale(self.optimizer) < scale_before, tf.int64)
                skipped += dropped
                if not precision.counts_skipped_steps(self.optimizer):
                    self.optimizer.iterations.assign_add(dropped)
        return total_loss / tf.cast(num_steps, tf.float32), skipped

    def _replica_eval_fn(self, batch):
        """One replica's eval counts; zeros for an empty batch.

        A replica gets an empty batch when the eval set does not split evenly
        over replicas (its last round), and oneDNN's convolutions fail on a
        batch of 0, so the model only runs on non-empty batches: every real
        example is counted once, none is dropped or padded.
        """
        size = tf.shape(tf.nest.flatten(batch)[0])[0]
        empty = self._empty_outputs()
        if empty is not None:
            # tf_keras metrics update variables: outside the cond (grappler warns about a
            # stateful op in a cond branch), on outputs that are empty for an empty batch.
            outputs = tf.cond(size > 0, lambda: self._eval_outputs(batch), lambda: empty)
            return self.task.eval_counts(batch, outputs)

        def counts():
            return self.task.eval_counts(batch, self._eval_outputs(batch))

        def nothing():
            return {name: tf.constant(0.0) for name in self.task.count_names}
        return tf.cond(size > 0, counts, nothing)

    def _eval_outputs(self, batch):
        outputs = self.model(self.task.inputs(batch), training=False)
        if self._empty_outputs() is None:
            return outputs
        return tf.nest.map_structure(lambda t: tf.cast(t, tf.float32), outputs)

    def _empty_outputs(self):
        """Zero-example outputs, for a task with Keras metrics and a model whose outputs
        have known shapes (one output, or several as the task's `output_spec` says: a
        list or a dict, as the model returns them); None otherwise."""
        spec = getattr(self.task, "output_spec", None)
        if spec is not None:
            shapes = [tuple(s.shape[1:]) for s in tf.nest.flatten(spec)]
            if any(None in shape for shape in shapes):
                return None
            return tf.nest.map_structure(
                lambda s: tf.zeros((0,) + tuple(s.shape[1:]), tf.float32), spec)
        if not getattr(self.task, "metric_objects", None):
            return None
        shape = getattr(self.model, "output_shape", None)
        if not isinstance(shape, tuple) or any(d is None for d in shape[1:]):
            return None
        return tf.zeros((0,) + shape[1:], tf.float32)

    def _eval_step(self, batch):
        per_replica = self.strategy.run(self._replica_eval_fn, args=(batch,))
        return tf.nest.map_structure(
            lambda v: self.strategy.reduce(tf.distribute.ReduceOp.SUM, v, axis=None), per_replica)

    # --- what the loop and the warm-up read: nothing else of the step's internals ---

    @property
    def global_step(self):
        """This run's optimizer updates done (calls' steps in forward mode, where nothing
        counts): the optimizer's iterations less `step_offset`."""
        if self.mode == "forward":
            return self.steps_run
        return int(self.optimizer.iterations.numpy()) - self.step_offset

    @property
    def workers(self):
        """Worker processes training together (MultiWorkerMirrored), else 1."""
        if not isinstance(self.strategy, tf.distribute.MultiWorkerMirroredStrategy):
            return 1
        # the strategy's own count (no public accessor): its cluster's workers and chief
        return int(getattr(self.strategy.extended, "_num_workers", 1))

    def any_worker_stopping(self, stopping_here):
        """Whether any worker was asked to stop: one all-reduce of a flag, which every
        worker calls after the same block, so all stop at the same step together."""
        flag = tf.constant(1.0 if stopping_here else 0.0)
        flags = self.strategy.experimental_distribute_values_from_function(lambda _: flag)
        return float(self.strategy.reduce(tf.distribute.ReduceOp.SUM, flags, axis=None)) > 0

    def state_variables(self):
        """Every variable a checkpoint or the warm-up's restore must cover: the model's and
        the optimizer's (iterations, slots, loss scale)."""
        extra = optimizer_variables(self.optimizer) if self.optimizer is not None else []
        return list(self.model.variables) + extra

    def _learning_rate(self):
        return current_learning_rate(self.optimizer) if self.optimizer is not None else 0.0

    def _loss_scale(self):
        """The dynamic loss scale (float16), else None."""
        return float(precision.loss_scale(self.optimizer)) if self.loss_scaled else None

    def reset_counter(self):
        """Forgets the steps run so far (warm-up steps are not the run's)."""
        self.steps_run = 0

    def warm_up_eval(self, batch):
        """One eval step on `batch`, to trace it before the run clock starts."""
        return self.eval_step(batch)

    def evaluate(self, distributed_dataset):
        """Sums the task's eval counts over a distributed dataset; returns its metrics.

        With parameter servers the chief evaluates a plain dataset itself (TF's
        inline evaluation), reading the variables from the parameter servers.
        """
        totals = None
        self.task.reset_metrics()
        for batch in distributed_dataset:
            sums = self.eval_step(batch)
            totals = sums if totals is None else {k: totals[k] + sums[k] for k in totals}
        return self.task.metrics({k: float(v) for k, v in totals.items()})
