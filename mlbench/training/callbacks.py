"""Callbacks: the run's events, for mlbench's own listeners and for a user's.

One mechanism: `Callback` is the base of mlbench's own listeners (the MLPerf logger, the
benchmark timer) and of a user's; `KerasCallbacks` gives Keras callbacks of either
generation (tf_keras or Keras 3) the events `Model.fit` gives them, so stock ones
(EarlyStopping, ModelCheckpoint, CSVLogger, TerminateOnNaN, LambdaCallback) work unchanged.

Keras' `fit` loop cannot be reused here: mlbench's step runs `steps_per_loop` steps per
host round trip and stops at a quality target, so the loop translates its own events.
An *epoch* is one eval period: it ends at each eval, whose metrics its logs carry (and at
the end of a run whose last steps were not evaluated).
"""
import dataclasses
import math
from typing import Any, Dict, Optional

from mlbench.training.monitor_modes import resolve_auto_mode


@dataclasses.dataclass(frozen=True)
class RunInfo:
    """What callbacks learn before the run starts (`Callback.on_configured`).

    Attributes:
      optimizer: the update rule (`OptimizerHparams`, or `KerasOptimizerHparams` for a
        Keras optimizer object); both have `name` and `learning_rate`.
      epoch_steps: steps per pass over the data in a run counted in epochs, else 0.
      target: the quality target ({metric: value}), or None.
    """
    model: str
    global_batch_size: int
    gradient_accumulation_steps: int
    train_steps: int
    eval_every: int
    epoch_steps: int
    num_train_examples: Optional[int]
    num_eval_examples: Optional[int]
    seed: int
    optimizer: Any
    target: Optional[Dict[str, float]] = None
    label_smoothing: float = 0.0


class Callback:
    """Run events, all optional; override the ones you need.

    `self.model` is the model being trained, set before `on_run_start`. Setting
    `self.model.stop_training = True` ends the run after the current block of steps: a
    checkpoint is written and `TrainResult.status` is 'stopped'.
    """
    model = None
    # mlbench's own listeners whose errors are the run's own (the diagnosis meeting a
    # corrupt shard): raised as they are, not wrapped as a CallbackError of user code
    raises_as_the_run = False

    def set_model(self, model):
        self.model = model

    def on_configured(self, info):
        """The run's figures (a RunInfo: batch, steps, examples, seed, optimizer) before it
        starts."""

    def on_run_start(self):
        """The run clock starts (compile and warm-up are done)."""

    def on_block_start(self, step, num_steps):
        """`num_steps` steps from global step `step` start (one compiled call)."""

    def on_block_stop(self, step, logs=None):
        """A block ended at global step `step`; logs: its mean `loss`, the `learning_rate`
        after it, and its number of `steps`."""

    def on_eval_start(self, step):
        """An eval at global step `step` starts."""

    def on_eval_stop(self, step, metrics):
        """An eval ended with `metrics` ({name: value}, mlbench's names)."""

    def on_epoch_boundary(self, step):
        """A pass over the training data ended at global step `step` (runs counted in
        epochs only), after that step's eval if it had one."""

    def on_run_stop(self, reached_target):
        """The run ended (finished, stopped, interrupted or failed)."""

    def on_run_error(self, error):
        """The run failed with `error` (after `on_run_stop`); the error is raised after
        every callback saw it, and a callback may add to what it says."""


class CallbackError(RuntimeError):
    """A callback raised: the run failed, and the error names the callback and event.
    `CallbackError.of` makes one that is also of the original error's type, so code that
    catches what Keras' fit raises (a TypeError from ReduceLROnPlateau) still catches it."""

    def __init__(self, callback, event, error):
        super().__init__(f"callback {type(callback).__name__} raised in {event}: "
                         f"{type(error).__name__}: {error}")
        self.callback, self.event = callback, event

    @classmethod
    def of(cls, callback, event, error):
        try:
            both = type(cls.__name__, (cls, type(error)), {"__module__": cls.__module__})
            return both(callback, event, error)
        except TypeError:  # an error type whose layout cannot be mixed in (OSError)
            return cls(callback, event, error)


def call_each(callbacks, event, *args):
    """`event(*args)` on each callback in order; an error fails the run, naming the callback."""
    for callback in callbacks:
        try:
            getattr(callback, event)(*args)
        except CallbackError:
            raise  # named already (a Keras callback inside KerasCallbacks)
        except Exception as e:  # any error of a user's code fails the run, named
            if getattr(callback, "raises_as_the_run", False):  # Keras callbacks have none
                raise
            raise CallbackError.of(callback, event, e) from e


class CallbackList(Callback):
    """Dispatches every event to each callback in order; an error names the callback."""

    def __init__(self, callbacks=()):
        self.callbacks = [c for c in callbacks if c is not None]

    def _each(self, event, *args):
        call_each(self.callbacks, event, *args)

    def set_model(self, model):
        self.model = model
        model.stop_training = False  # the flag Keras' callbacks set to stop a run
        self._each("set_model", model)

    def stop_requested(self):
        return bool(getattr(self.model, "stop_training", False))

    def terminates_on_nan(self):
        """Whether the user gave Keras' TerminateOnNaN (either generation): a non-finite
        loss then stops the run as Keras' fit stops it (the callback sets
        `model.stop_training`, the run returns) instead of mlbench's DivergenceError."""
        return any(type(k).__name__ == "TerminateOnNaN"
                   and type(k).__module__.startswith(("keras", "tf_keras"))
                   for c in self.callbacks for k in getattr(c, "callbacks", [c]))

    def on_configured(self, info):
        self._each("on_configured", info)

    def on_run_start(self):
        self._each("on_run_start")

    def on_block_start(self, step, num_steps):
        self._each("on_block_start", step, num_steps)

    def on_block_stop(self, step, logs=None):
        self._each("on_block_stop", step, logs)

    def on_eval_start(self, step):
        self._each("on_eval_start", step)

    def on_eval_stop(self, step, metrics):
        self._each("on_eval_stop", step, metrics)

    def on_epoch_boundary(self, step):
        self._each("on_epoch_boundary", step)

    def on_run_stop(self, reached_target, failed=False):
        """`failed`: the run is failing (its error follows in `on_run_error`); Keras'
        callbacks then see no `on_train_end`, as an error in Keras' fit skips it."""
        call_each([c for c in self.callbacks if not (failed and isinstance(c, KerasCallbacks))],
                  "on_run_stop", reached_target)

    def on_run_error(self, error):
        self._each("on_run_error", error)


def epoch_logs(blocks, metrics=None, train_metrics=None):
    """One epoch's logs in Keras' names and meanings: `loss` (the step-weighted mean
    training loss of its blocks, `blocks` = [(steps, loss)]), the training metrics under
    their own names (`accuracy`: over the epoch's training batches, computed for models
    of your own), and for an evaluated epoch the validation figures `val_loss` and
    `val_<metric>`. No `learning_rate`: Keras' fit logs it only when a learning-rate
    callback adds it (ReduceLROnPlateau and LearningRateScheduler do, here too);
    `TrainResult.history` keeps the rate of every block."""
    steps = sum(n for n, _ in blocks)
    logs = {"loss": sum(n * loss for n, loss in blocks) / steps if steps else math.nan}
    logs.update(train_metrics or {})
    for name, value in (metrics or {}).items():
        logs[log_name(name)] = value
    return logs


def log_name(metric):
    """The Keras log key of an eval metric mlbench reports: 'val_loss' for 'eval_loss',
    else 'val_<metric>'."""
    return "val_loss" if metric == "eval_loss" else f"val_{metric}"


def log_names(produced, has_eval, trained=()):
    """Every key a run's epoch logs can carry, for eval metrics `produced` and training
    metrics `trained`."""
    return (["loss"] + list(trained) +
            ([log_name(m) for m in produced] if has_eval else []))


def keras_history(history):
    """`TrainResult.history` records as Keras' `History.history`: {key: [one per epoch]}.
    Epochs end at the records marked `epoch_end` (a run counted in epochs), else at
    each eval."""
    by_pass = any(record.get("epoch_end") for record in history)
    epochs, blocks, previous, metrics = [], [], 0, None
    for record in history:
        blocks.append((record["step"] - previous, record["loss"]))
        previous = record["step"]
        metrics = record.get("metrics", metrics if by_pass else None)
        if record.get("epoch_end") if by_pass else "metrics" in record:
            epochs.append(epoch_logs(blocks, metrics, record.get("train_metrics")))
            blocks, metrics = [], None
    if blocks:
        epochs.append(epoch_logs(blocks, metrics, history[-1].get("train_metrics")))
    keys = []
    for logs in epochs:
        keys += [k for k in logs if k not in keys]
    return {k: [logs.get(k, math.nan) for logs in epochs] for k in keys}


class KerasCallbacks(Callback):
    """Keras callbacks (tf_keras or Keras 3) driven by the run's events as `fit` drives
    them: train begin/end, epoch begin/end (an epoch is a pass over the training data
    when the run is counted in epochs, else one eval period), train batch begin/end (a
    batch = one block of steps, logs `loss`), test begin/end around
    each eval."""

    def __init__(self, callbacks):
        self.callbacks = list(callbacks)
        self.epoch, self.batch, self.blocks, self.open = 0, 0, [], False
        self.last_logs = {}
        self.by_pass, self.pending, self.train_metrics = False, None, None

    def _each(self, method, *args):
        call_each(self.callbacks, method, *args)

    def set_model(self, model):
        self.model = model
        self._each("set_model", model)
        for callback in self.callbacks:
            resolve_auto_mode(callback)

    def on_configured(self, info):
        self.by_pass = bool(info.epoch_steps)
        every = info.epoch_steps or info.eval_every or info.train_steps
        self._each("set_params", {"verbose": 0, "steps": every,
                                  "epochs": math.ceil(info.train_steps / every)})

    def on_run_start(self):
        self._each("on_train_begin", {})

    def on_block_start(self, step, num_steps):
        if not self.open:
            self._each("on_epoch_begin", self.epoch, {})
            self.open, self.batch, self.blocks = True, 0, []
        self._each("on_train_batch_begin", self.batch, {})

    def on_block_stop(self, step, logs=None):
        logs = dict(logs or {})
        self.blocks.append((logs.pop("steps", 1), logs["loss"]))
        logs.pop("learning_rate", None)  # as fit's batch logs: a callback adds it if it sets it
        self.train_metrics = logs.pop("train_metrics", None)
        logs.update(self.train_metrics or {})  # as fit's batch logs carry them
        self._each("on_train_batch_end", self.batch, logs)
        self.batch += 1

    def on_eval_start(self, step):
        self._each("on_test_begin", {})

    def on_eval_stop(self, step, metrics):
        test_logs = {("loss" if k == "eval_loss" else k): v for k, v in metrics.items()}
        self._each("on_test_end", test_logs)
        if self.by_pass:
            self.pending = metrics  # the epoch ends at its boundary, right after
        else:
            self._end_epoch(metrics)

    def on_epoch_boundary(self, step):
        if self.by_pass and self.open:
            self._end_epoch(self.pending)
            self.pending = None

    def _end_epoch(self, metrics=None):
        self.last_logs = epoch_logs(self.blocks, metrics, self.train_metrics)
        self._each("on_epoch_end", self.epoch, self.last_logs)
        self.epoch, self.open = self.epoch + 1, False

    def on_run_stop(self, reached_target):
        if self.open and self.blocks:  # steps since the last epoch's end
            self._end_epoch(self.pending)
        self._each("on_train_end", self.last_logs)


# Which way mlbench's metrics improve (Keras' `mode` for a monitored metric).
# Stock callbacks that cannot work in this loop, by class name, with the reason.
REFUSED = {
    "BackupAndRestore": "mlbench resumes from the checkpoints in model_dir itself "
                        "(the same command continues an interrupted run)",
    "ProgbarLogger": "mlbench prints its own progress (verbose=True)",
}


def check_callbacks(callbacks):
    """`callbacks` is a list of mlbench or Keras callbacks that can work here; refused
    before anything is built or written otherwise."""
    from mlbench.models import keras3
    if callbacks is None:
        return
    if not isinstance(callbacks, (list, tuple)):
        raise ValueError(f"`callbacks` ({callbacks!r}) must be a list such as "
                         "[keras.callbacks.EarlyStopping(patience=2)].")
    import tf_keras
    for callback in callbacks:
        keras_one = isinstance(callback, tf_keras.callbacks.Callback) or \
            keras3.is_callback(callback)
        if not keras_one and not isinstance(callback, Callback):
            raise ValueError(f"`callbacks` entry ({callback!r}) is not a callback: expected "
                             "a keras.callbacks.Callback (Keras 3 or tf_keras) or a "
                             "mlbench.Callback.")
        reason = keras_one and REFUSED.get(type(callback).__name__)
        if reason and type(callback).__module__.startswith(("keras", "tf_keras")):
            raise ValueError(f"`callbacks` entry {type(callback).__name__} cannot work in "
                             f"mlbench's loop: {reason}.")


def check_monitors(callbacks, produced, has_eval, trained=()):
    """A Keras callback watching a log the run will never write (`monitor='val_loss'`
    without eval data, a metric the run does not compute, a training metric) is refused
    before anything is built: Keras itself only warns, every epoch, and the callback
    then never acts."""
    available = log_names(produced, has_eval, trained)
    for callback in callbacks or ():
        monitor = getattr(callback, "monitor", None)
        if isinstance(callback, Callback) or not isinstance(monitor, str) or \
                monitor in available:
            continue
        raise ValueError(f"`callbacks` entry {type(callback).__name__}(monitor={monitor!r}) "
                         "watches a log this run never writes: "
                         f"{_monitor_hint(monitor, has_eval)} Its epoch logs carry "
                         f"{available}.")


def _monitor_hint(monitor, has_eval):
    if monitor.startswith("val_") and not has_eval:
        return "the run has no eval data (give `eval_data`, or `validation_data` / " \
               "`validation_split` to `mlbench.fit`)."
    if not monitor.startswith("val_"):
        return ("training metrics are computed for models of your own only (the zoo's "
                f"are evaluated: monitor 'val_{monitor}').")
    return "no metric of the run has that name."


def for_run(callbacks):
    """A CallbackList of `callbacks`: mlbench ones as they are, then the Keras ones
    (tf_keras or Keras 3) in one KerasCallbacks adapter, each group in the order given."""
    ours, theirs = [], []
    for callback in callbacks or ():
        (ours if isinstance(callback, Callback) else theirs).append(callback)
    return CallbackList(ours + ([KerasCallbacks(theirs)] if theirs else []))
