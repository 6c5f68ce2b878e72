"""`resolve(arguments) -> RunPlan`: every check of bad input, before anything is built or written.

Data flows one way: arguments + gin → RunPlan → Parts (`mlbench.parts.build`)
→ Loop → result. A RunPlan holds every decision a run depends on, resolved
to concrete values (steps, not epochs; a policy name, not 'auto'; a strategy
object and its replica count). `resolve` may read data sizes and create the
strategy, but builds no model, writes no file and runs no step.
"""
import dataclasses
import math
import os
from typing import Any, Dict, Optional, Tuple

import gin
import tensorflow as tf

from mlbench import data as data_lib
from mlbench import models, optimizers
from mlbench import precision as precision_lib
from mlbench.distribute import cluster, strategies

@gin.configurable("train", module="mlbench")
def gin_train_arguments(**arguments):
    """The `train.*` values bound in gin (registered under gin's name `train`).

    gin hands a **kwargs configurable exactly what was bound; `train_arguments`
    refuses names that are no argument of `mlbench.train`.
    """
    return arguments


def train_arguments(explicit, defaults):
    """The run's arguments: `defaults`, then gin's `train.*` bindings, then `explicit`."""
    bound = gin_train_arguments()
    unknown = sorted(set(bound) - set(defaults))
    if unknown:
        raise ValueError(f"gin binding(s) {['train.' + n for n in unknown]} name no argument "
                         f"of `mlbench.train`; known: {sorted(defaults)}.")
    return {**defaults, **bound, **explicit}


@dataclasses.dataclass(frozen=True)
class RunPlan:
    """Every decision of one run, resolved. Built by `resolve`, read by `parts.build`.

    Attributes:
      mode: 'train' (optimizer updates) or 'forward' (inference timing in benchmark mode).
      model / model_info / model_options: the registry name, its entry, factory overrides.
      input_shape: the model's per-example input shape (images are adapted to it).
      source: the DataSource; `has_eval` says whether it has an eval set.
      strategy / replicas: the tf.distribute strategy and its replica count.
      global_batch_size / microbatches / per_replica_batch: examples per step, the
        accumulation factor k, and what one replica gets per step (k micro-batches).
      precision / jit_compile: the resolved policy name and XLA choice.
      train_steps / steps_per_loop / eval_every / eval_offset / checkpoint_every: cadence
        in optimizer steps (0 = never / only at the end).
      target: {metric: value} or None.
      model_dir / resume / init_checkpoint: where the run lives and how it starts.
      optimizer / optimizer_hparams / label_smoothing: the update rule as resolved.
      seed / warmup / verbose / trace_dir: as given.
      arguments: the arguments as requested (recorded in results).
    """
    mode: str
    model: str
    model_info: Any
    model_options: Dict[str, Any]
    input_shape: Tuple[int, ...]
    source: Any
    strategy: Any
    replicas: int
    global_batch_size: int
    microbatches: int
    per_replica_batch: int
    precision: str
    jit_compile: bool
    train_steps: int
    steps_per_loop: int
    eval_every: int
    eval_offset: int
    checkpoint_every: int
    target: Optional[Dict[str, float]]
    model_dir: Optional[str]
    resume: bool
    init_checkpoint: Optional[str]
    optimizer: str
    optimizer_hparams: Dict[str, Any]
    label_smoothing: float
    seed: int
    warmup: bool
    verbose: bool
    trace_dir: Optional[str]
    arguments: Dict[str, Any]

    @property
    def has_eval(self):
        return not self.source.on_device and self.mode == "train"

    def describe(self):
        """What ran, for results: precision, XLA, micro-batches, strategy, replicas."""
        return dict(precision=self.precision, jit_compile=self.jit_compile,
                    microbatches=self.microbatches, **strategies.describe(self.strategy))


def resolve(arguments):
    """Checks `arguments` (all of `mlbench.train`'s) and returns the RunPlan.

    Raises:
      ValueError: naming the argument and its value, before anything is built or written.
    """
    a = dict(arguments)
    _check_scalars(a)
    info = models.info(a["model"])
    strategy = strategies.get_strategy(a["strategy"], a["num_devices"], a["all_reduce"])
    replicas, k = strategy.num_replicas_in_sync, a["gradient_accumulation_steps"]
    check_batch(a["global_batch_size"], replicas, k)
    model_options = dict(a["model_options"] or {})
    source = data_lib.get(a["data"], data_dir=a["data_dir"], model_info=info,
                          **(a["data_options"] or {}))
    input_shape = model_input_shape(info, model_options, source)
    steps, every, offset = _lengths(a, source)
    _check_target(a["target"], source)
    return RunPlan(
        mode="train", model=a["model"], model_info=info,
        model_options=_model_options(info, model_options, source), input_shape=input_shape,
        source=source, strategy=strategy, replicas=replicas,
        global_batch_size=a["global_batch_size"], microbatches=k,
        per_replica_batch=a["global_batch_size"] // replicas,
        precision=precision_lib.resolve_precision(a["precision"]),
        jit_compile=precision_lib.resolve_jit_compile(a["jit_compile"]),
        train_steps=steps, steps_per_loop=a["steps_per_loop"], eval_every=every,
        eval_offset=offset, checkpoint_every=a["checkpoint_every"], target=a["target"],
        model_dir=a["model_dir"], resume=a["resume"], init_checkpoint=a["init_checkpoint"],
        optimizer=a["optimizer"],
        optimizer_hparams=_optimizer_hparams(a["optimizer"], a["learning_rate"],
                                             a["optimizer_options"], steps),
        label_smoothing=a["label_smoothing"], seed=a["seed"], warmup=a["warmup"],
        verbose=a["verbose"], trace_dir=a["trace_dir"],
        arguments={k: v for k, v in a.items() if k != "hooks"})


def _check_scalars(a):
    missing = [k for k in ("model", "data", "global_batch_size") if a[k] is None]
    if missing:
        raise ValueError(f"train() needs {missing} (as arguments or gin bindings `train.*`).")
    models.info(a["model"])
    data_lib.check_name(a["data"])
    precision_lib.resolve_precision(a["precision"])
    precision_lib.resolve_jit_compile(a["jit_compile"])
    strategies.validate_strategy_name(a["strategy"], a["all_reduce"])
    if a["optimizer"] not in optimizers.OPTIMIZERS:
        raise ValueError(f"`optimizer` ({a['optimizer']!r}) must be one of "
                         f"{list(optimizers.OPTIMIZERS)}.")
    check_positive_int("gradient_accumulation_steps", a["gradient_accumulation_steps"])
    check_positive_int("steps_per_loop", a["steps_per_loop"])
    if not isinstance(a["checkpoint_every"], int) or a["checkpoint_every"] < 0:
        raise ValueError(f"`checkpoint_every` ({a['checkpoint_every']!r}) must be an integer >= 0.")
    _check_lengths(a)
    _check_cluster(a)
    check_model_dir(a["model_dir"], a["resume"])


def _check_cluster(a):
    """ps tasks in TF_CONFIG need a strategy that uses them, and the reverse."""
    config = cluster.parse_tf_config()
    uses_ps = a["strategy"] in ("auto", "parameter_server")
    if cluster.has_ps(config):
        cluster.check_parameter_server_cluster(config)
    if cluster.has_ps(config) and not uses_ps:
        raise ValueError(f"`strategy` ({a['strategy']!r}) cannot use the ps tasks in "
                         f"TF_CONFIG ({config['cluster']['ps']}); use 'parameter_server' "
                         "(or 'auto'), or launch without --num_ps.")
    if cluster.has_ps(config) and a["warmup"]:
        raise ValueError("`warmup` (True) is not supported with parameter servers "
                         "(the warm-up runs on the chief's own devices).")


def check_positive_int(name, value):
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"`{name}` ({value!r}) must be an integer >= 1.")


def _check_lengths(a):
    steps, epochs = a["train_steps"], a["train_epochs"]
    if (steps is None) == (epochs is None):
        raise ValueError(f"Give exactly one of `train_steps` ({steps!r}) and "
                         f"`train_epochs` ({epochs!r}).")
    if steps is not None:
        check_positive_int("train_steps", steps)
    elif not epochs > 0:
        raise ValueError(f"`train_epochs` ({epochs!r}) must be > 0.")
    if a["eval_every"] is not None and a["eval_every_epochs"] is not None:
        raise ValueError(f"Give at most one of `eval_every` ({a['eval_every']!r}) and "
                         f"`eval_every_epochs` ({a['eval_every_epochs']!r}).")


def latest_checkpoint(model_dir):
    """The newest checkpoint under `model_dir/checkpoints`, or None."""
    if not model_dir:
        return None
    return tf.train.latest_checkpoint(os.path.join(model_dir, "checkpoints"))


def check_model_dir(model_dir, resume=True):
    """Missing parents are fine (they are created); a file in the way, an unwritable
    location, or checkpoints when `resume=False` are not."""
    if model_dir is None:
        return
    existing = os.path.abspath(model_dir)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise ValueError(f"`model_dir` ({model_dir!r}): {existing!r} is a file, not a "
                         "directory; expected a directory path.")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"`model_dir` ({model_dir!r}): {existing!r} is not writable.")
    latest = latest_checkpoint(model_dir) if not resume and cluster.is_chief() else None
    if latest:
        raise ValueError(f"`model_dir` ({model_dir!r}) holds checkpoints "
                         f"({latest}) and `resume` is False: give an "
                         "empty directory, or resume=True to continue that run.")


def check_batch(global_batch_size, replicas, k):
    check_positive_int("global_batch_size", global_batch_size)
    if global_batch_size % (replicas * k):
        raise ValueError(f"`global_batch_size` ({global_batch_size}) must be divisible by "
                         f"replicas × microbatches ({replicas}×{k}).")


def model_input_shape(info, model_options, source):
    """The model's input shape: its registry shape, or the `image_size` the user set.

    Image data of another shape is adapted to it (resized, channels repeated or
    averaged), as tf_cnn_benchmarks resized ImageNet to each model's size.
    """
    if info.kind != "image":
        if info.kind == "vector" and source.kind == "vector":
            return tuple(source.input_shape)
        if source.kind != info.kind:
            raise ValueError(f"`data` ({source.name!r}, {source.kind} examples of shape "
                             f"{tuple(source.input_shape)}) does not fit `model` "
                             f"({info.name!r}), which takes {info.kind} inputs.")
        return tuple(info.input_shape)
    if source.kind != "image":
        raise ValueError(f"`data` ({source.name!r}, {source.kind} examples of shape "
                         f"{tuple(source.input_shape)}) does not fit `model` ({info.name!r}), "
                         f"which takes images of shape {tuple(info.input_shape)}.")
    size = model_options.get("image_size")
    height, width, channels = info.input_shape
    return (size, size, channels) if size else (height, width, channels)


def _model_options(info, model_options, source):
    options = dict(model_options)
    if info.kind == "bert" and getattr(source, "vocab_size", None):
        options.setdefault("vocab_size", source.vocab_size)  # the data's vocabulary
    if info.kind == "vector":
        options.setdefault("input_dim", int(source.input_shape[0]))
    return options


def _lengths(a, source):
    """Epochs → steps with the source's train-set size: (steps, eval_every, eval_offset)."""
    needs_size = a["train_epochs"] is not None or a["eval_every_epochs"] is not None
    if needs_size and not source.num_train_examples:
        raise ValueError(f"Epoch-based lengths need a known train-set size; data "
                         f"{source.name!r} has none: use `train_steps`/`eval_every`.")
    per_epoch = source.num_train_examples / a["global_batch_size"] if needs_size else None
    steps = (a["train_steps"] if a["train_steps"] is not None
             else max(1, math.ceil(a["train_epochs"] * per_epoch)))
    every, offset = a["eval_every"] or 0, 0
    if a["eval_every_epochs"] is not None:
        every = max(1, round(a["eval_every_epochs"] * per_epoch))
        offset = round(a["eval_offset_epochs"] * per_epoch)
    if source.on_device:
        every = 0  # synthetic data has no eval set: no evals, not a failure at the end
    return steps, every, offset


def _check_target(target, source):
    if target is None:
        return
    if not isinstance(target, dict) or not target:
        raise ValueError(f"`target` ({target!r}) must be a dict such as {{'top1': 0.97}}.")
    if source.on_device:
        raise ValueError(f"`target` ({target!r}) needs an eval set; data {source.name!r} "
                         "(synthetic) has none.")


def _optimizer_hparams(name, learning_rate, options, train_steps):
    options = dict(options or {})
    if options.get("schedule", "constant") != "constant":
        options.setdefault("decay_steps", train_steps)
    return optimizers.hyperparameters(name, learning_rate, **options)
