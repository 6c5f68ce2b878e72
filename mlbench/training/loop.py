"""The outer cadence: train in blocks of steps (one host round trip each), eval,
checkpoint, summarise, stop at target.

Why not Orbit's Controller: it has no notion of a quality target, of
time-to-quality, or of the MLPerf block/eval events, and its `train_steps`
cannot end at the first eval that meets a target without a custom trainer
that re-implements most of this file. The step itself is `TrainStep`; the
loop enters compiled code only through `TrainStep.run`.
"""
import contextlib
import dataclasses
import math
import os
import signal
import time
from typing import Any, Callable, Dict, List, Optional

import tensorflow as tf

from mlbench.training import checkpoints
from mlbench.training.cadence import Cadence
from mlbench.training.callbacks import Callback, CallbackList
from mlbench.training.interrupt import StopRequests
from mlbench.training.profile import Profile


class DivergenceError(RuntimeError):
    """The training loss became NaN or Inf; the run stopped (checkpoints stay finite)."""

    def __init__(self, step, loss):
        super().__init__(f"training diverged: the mean loss of the steps up to step {step} is "
                         f"{loss} (not finite). The run stopped; the last checkpoint, if any, "
                         "is from before the divergence. Lower the learning rate or use "
                         "float32/bf16.")
        self.step, self.loss = step, loss


@dataclasses.dataclass(frozen=True)
class LoopConfig:
    """One run of the loop, as decided before it starts (nothing changes it after).

    Attributes:
      cadence: the run's length, eval, checkpoint and target (`training.cadence`).
      log: receives messages (evals) (None = silent).
      progress: receives step updates (`mlbench.training.progress.Progress`; None = silent).
      warmup: compiles and warms up on synthetic data, then restores the initial
        state; it runs before `on_run_start` so compile time stays out of the run.
      trace_dir: a TensorBoard profile of the second block of steps goes here.
    The global batch is the step's own (`TrainStep.global_batch_size`).
    """
    cadence: Cadence
    log: Optional[Callable[[str], None]] = print
    progress: Optional[object] = None
    warmup: Optional[Callable[[], None]] = None
    trace_dir: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class LoopOutputs:
    """Where the loop writes: its checkpoint manager (None: no checkpoints) and its
    summary writers by name ('train', 'validation'), made by `outputs_for`."""
    manager: Optional[Any] = None
    writers: Optional[Dict[str, Any]] = None

    def writer(self, name):
        return self.writers[name] if self.writers else _NoSummaries()


class _NoSummaries:
    """The writer of a run that writes nothing. TF's noop writer is not enough: inside
    its `as_default` the loop's scalars would still reach a default writer set around the
    run (a user's own, or Keras' TensorBoard callback's with `update_freq` in batches)."""

    @contextlib.contextmanager
    def as_default(self, step=None):
        with tf.summary.record_if(False):
            yield

    def flush(self):
        pass


def outputs_for(model_dir, checkpoint):
    """The checkpoint manager and summary writers of a run in `model_dir` (None: a run
    that writes nothing)."""
    if not model_dir:
        return LoopOutputs()
    manager = checkpoints.manager(checkpoint, model_dir) if checkpoint is not None else None
    return LoopOutputs(manager, {name: tf.summary.create_file_writer(
        os.path.join(model_dir, name)) for name in ("train", "validation")})


@dataclasses.dataclass
class _RunState:
    """What the loop has learnt so far: the history, the last eval's metrics, whether
    the target was met and when."""
    history: List[dict] = dataclasses.field(default_factory=list)
    metrics: Dict[str, float] = dataclasses.field(default_factory=dict)
    reached: bool = False
    ttq: Optional[float] = None


@dataclasses.dataclass
class LoopOutcome:
    history: List[dict]
    final_metrics: Dict[str, float]
    reached_target: bool
    time_to_quality_s: Optional[float]
    steps: int
    examples_per_second: Optional[float]
    compile_s: float
    skipped_steps: int
    run_seconds: float
    interrupted: Optional[int] = None  # the signal that stopped the run, if one did
    stopped: bool = False  # a callback set `model.stop_training`


def target_met(metrics, target):
    return bool(target) and all(metrics.get(k, -math.inf) >= v for k, v in target.items())


class Loop:
    """Drives a TrainStep; see LoopConfig. `make_eval_dataset()` builds the eval set on
    demand (None: the data has no eval set, so no evals); `outputs` (`outputs_for`) are
    where checkpoints and summaries go, made by the caller."""

    def __init__(self, config, train_step, train_inputs, make_eval_dataset,
                 outputs=LoopOutputs(), callbacks=None):
        self.config, self.step, self.inputs = config, train_step, train_inputs
        self.make_eval_dataset = make_eval_dataset
        if not isinstance(callbacks, CallbackList):
            callbacks = CallbackList([callbacks] if isinstance(callbacks, Callback) else
                                     callbacks or ())
        self.callbacks = callbacks
        self.manager = outputs.manager
        self.writers = {name: outputs.writer(name) for name in ("train", "validation")}

    @property
    def global_step(self):
        return self.step.global_step

    def run(self):
        c, timing = self.config, _Timing()
        state = _RunState()
        if c.warmup:
            warm_start = time.perf_counter()
            c.warmup()
            timing.compile_s += time.perf_counter() - warm_start
        self.callbacks.on_run_start()
        run_start = time.perf_counter()
        try:
            with StopRequests() as stop:
                step = self._train(state, timing, run_start, stop)
        except Exception as error:  # divergence, corrupt data, a lost worker: aborted
            self.callbacks.on_run_stop(False, failed=True)
            self.callbacks.on_run_error(error)
            raise
        self.callbacks.on_run_stop(state.reached)
        for writer in self.writers.values():
            writer.flush()
        return LoopOutcome(state.history, state.metrics, state.reached, state.ttq,
                           step, timing.examples_per_second(), timing.compile_s, timing.skipped,
                           time.perf_counter() - run_start, stop.signum,
                           self.callbacks.stop_requested())

    def _train(self, state, timing, run_start, stop):
        c, cadence = self.config, self.config.cadence
        step, block, saved = self.global_step, 0, None
        agreed = False  # several workers: the stop all of them agreed on
        while (step < cadence.train_steps and not state.reached and
               not (agreed if self.step.workers > 1 else stop.signum is not None)
               and not self.callbacks.stop_requested()):
            # Without warm-up the first call runs a single step: it carries the
            # trace/compile and is kept out of the examples/sec figure.
            first = block == 0 and not c.warmup
            n = 1 if first else cadence.next_boundary(step, bool(self.make_eval_dataset)) - step
            stop.block_end = step + n
            with self._maybe_trace(block):
                outcome, train_metrics, seconds = self._train_block(step, n, timing, first)
            step, block, loss = self.global_step, block + 1, outcome.loss
            record = self._record(step, outcome, timing, run_start, state.history)
            if not math.isfinite(loss):  # TerminateOnNaN stopped it: nothing to evaluate
                break  # or save; the last finite checkpoint stays
            if train_metrics is not None:
                record["train_metrics"] = train_metrics
            if not first and seconds > 0:  # this block's own rate: compare's noise band
                record["block_examples_per_second"] = n * self.step.global_batch_size / seconds
            if self.make_eval_dataset and (cadence.eval_due(step) or step >= cadence.train_steps):
                state.metrics = self._evaluate(step, record)
                if target_met(state.metrics, cadence.target):
                    state.reached, state.ttq = True, time.perf_counter() - run_start
            evaluated = "metrics" in record
            if cadence.epoch_due(step):
                record["epoch_end"] = True
                self.callbacks.on_epoch_boundary(step)
            if self.step.train_metrics and (cadence.epoch_due(step) if cadence.epoch_steps
                                            else evaluated):
                self.step.task.reset_train_metrics()  # the next epoch's figures start
            if self.manager and (cadence.checkpoint_due(step) or state.reached):
                self._save(step, loss)
                saved = step
            if self.step.workers > 1:  # a signal after this point waits for the next
                agreed = self._agree_on_stop(stop, step)
        stopped = stop.signum is not None or self.callbacks.stop_requested()
        if stopped and self.manager and saved != step and block and math.isfinite(loss):
            self._save(step, loss)  # interrupted or stopped: keep the steps since the last save
        return step

    def _agree_on_stop(self, stop, step):
        """Several workers stop together: a SIGTERM (preemption) or SIGINT reaches one pod
        or process, and every worker stops after the same block, the chief saving one
        checkpoint there. Alone, the signalled worker would leave and the others would
        wait in their next collective until its timeout, losing the steps since the last
        checkpoint. A signal that arrives after the agreement is acted on at the next.

        Not TF's PreemptionCheckpointHandler: it installs its own SIGTERM handler, saves
        through its own checkpoint call at a step of its own counting and ends the process
        through its `exit_fn`, where the loop already stops at a block's end, saves only
        finite state and reports the interruption (exit 143, result.json); the agreement
        is all it lacks, and one all-reduce per block gives it."""
        agreed = self.step.any_worker_stopping(stop.signum is not None)
        if agreed and stop.signum is None:
            stop.signum = signal.SIGTERM
            # said whatever the verbosity, as the signalled worker says its own stop
            os.write(2, f"another worker was asked to stop: stopping with it at step {step} "
                        "to save a checkpoint there.\n".encode())
        return agreed

    def _save(self, step, loss):
        """Saves only finite state (`mlbench.training.checkpoints`)."""
        if not checkpoints.save_finite(self.manager, self.step.state_variables(), step):
            raise DivergenceError(step, f"{loss} with non-finite weights or optimizer state")

    def _maybe_trace(self, block):
        """Profiles the second block (the first may carry tracing and compilation)."""
        wanted = self.config.trace_dir and block == (0 if self.config.warmup else 1)
        return Profile(self.config.trace_dir, self.config.log) if wanted else \
            contextlib.nullcontext()

    def _train_block(self, step, n, timing, first):
        self.callbacks.on_block_start(step, n)
        start = time.perf_counter()
        outcome = self.step.run(self.inputs, n)  # returns when the devices are done
        seconds = time.perf_counter() - start
        timing.add(seconds, n * self.step.global_batch_size, first)
        timing.skipped += outcome.skipped_steps
        # Checked on the host once per block (not per step): a NaN/Inf loss stops
        # the run before any checkpoint of the diverged weights is written; with Keras'
        # TerminateOnNaN the callback sees the loss and stops the run, as in fit.
        if self.step.mode == "train" and not math.isfinite(outcome.loss) and \
                not self.callbacks.terminates_on_nan():
            raise DivergenceError(step + n, outcome.loss)
        logs = {"loss": outcome.loss, "steps": n, "learning_rate": outcome.learning_rate}
        if self.step.train_metrics:
            logs["train_metrics"] = self.step.task.train_metrics()
        self.callbacks.on_block_stop(step + n, logs)
        return outcome, logs.get("train_metrics"), seconds

    def _record(self, step, outcome, timing, run_start, history):
        eps = timing.examples_per_second()
        record = {"step": step, "loss": outcome.loss, "learning_rate": outcome.learning_rate,
                  "wall_time_s": time.perf_counter() - run_start,
                  "examples_per_second": eps, "skipped_steps": outcome.skipped_steps}
        if outcome.loss_scale is not None:
            record["loss_scale"] = outcome.loss_scale
        history.append(record)
        self._summaries(step, record, outcome.loss_scale)
        self._progress(step, outcome.loss, outcome.learning_rate, eps)
        return record

    def _summaries(self, step, record, loss_scale):
        with self.writers["train"].as_default(step=step):
            tf.summary.scalar("loss", record["loss"])
            tf.summary.scalar("learning_rate", record["learning_rate"])
            tf.summary.scalar("skipped_steps", record["skipped_steps"])
            if record["examples_per_second"]:
                tf.summary.scalar("examples_per_second", record["examples_per_second"])
                tf.summary.scalar("steps_per_second", record["examples_per_second"] /
                                  self.step.global_batch_size)
            if loss_scale is not None:
                tf.summary.scalar("loss_scale", loss_scale)

    def _progress(self, step, loss, lr, eps):
        if self.config.progress is not None:
            self.config.progress.step(step, loss, lr, eps)

    def _evaluate(self, step, record):
        self.callbacks.on_eval_start(step)
        metrics = self.step.evaluate(self.make_eval_dataset())
        self.callbacks.on_eval_stop(step, metrics)
        record["metrics"] = metrics
        with self.writers["validation"].as_default(step=step):
            for name, value in metrics.items():
                tf.summary.scalar(name, value)
            if "eval_loss" in metrics:  # the train loss's tag too: the two curves overlay
                tf.summary.scalar("loss", metrics["eval_loss"])
        if self.config.log:
            self.config.log(f"eval at step {step}: " +
                            "  ".join(f"{k} {v:.4f}" for k, v in metrics.items()))
        return metrics


class _Timing:
    """Examples/sec over the timed blocks only (the compile block is excluded)."""

    def __init__(self):
        self.seconds, self.examples, self.compile_s, self.skipped = 0.0, 0, 0.0, 0

    def add(self, seconds, examples, is_compile):
        if is_compile:
            self.compile_s += seconds
        else:
            self.seconds += seconds
            self.examples += examples

    def examples_per_second(self):
        return self.examples / self.seconds if self.seconds > 0 else None
