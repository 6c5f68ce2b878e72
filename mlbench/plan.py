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
from mlbench.bench import defaults as page
from mlbench.bench import variable_update as vu
from mlbench.distribute import cluster, strategies
from mlbench.reprs import recordable, short
from mlbench.training import task as task_lib
from mlbench.training.checkpoints import latest_checkpoint

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
      loss / metrics: a model of your own's loss and metrics (None: the defaults).
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
    loss: Any
    metrics: Any
    seed: int
    warmup: bool
    verbose: bool
    trace_dir: Optional[str]
    arguments: Dict[str, Any]

    @property
    def has_eval(self):
        return self.source.has_eval and self.mode == "train"

    @property
    def num_classes(self):
        """The classifier width: your own model's output width, else the data's labels."""
        return self.model_info.output_width or max(self.source.num_classes, 1)

    def describe(self):
        """What ran, for results: precision, XLA, gradient accumulation (the user's name
        for the micro-batches per step), strategy, replicas."""
        return dict(precision=self.precision, jit_compile=self.jit_compile,
                    gradient_accumulation_steps=self.microbatches,
                    **strategies.describe(self.strategy))


def resolve(arguments):
    """Checks `arguments` (all of `mlbench.train`'s) and returns the RunPlan.

    Raises:
      ValueError: naming the argument and its value, before anything is built or written.
    """
    a = dict(arguments)
    _check_scalars(a)
    info = models.resolve(a["model"])
    strategy = strategies.get_strategy(a["strategy"], a["num_devices"], a["all_reduce"])
    replicas, k = strategy.num_replicas_in_sync, a["gradient_accumulation_steps"]
    check_batch(a["global_batch_size"], replicas, k)
    check_instance(info, strategy, a["precision"])
    strategy = instance_strategy(info, strategy)
    model_options = dict(a["model_options"] or {})
    source = data_lib.get(a["data"], data_dir=a["data_dir"], model_info=info,
                          eval_data=a["eval_data"], **(a["data_options"] or {}))
    input_shape = model_input_shape(info, model_options, source)
    check_labels(info, source, a["loss"])
    steps, every, offset = _lengths(a, source)
    _check_target(a["target"], source, task_lib.produced_metrics(info, a["loss"], a["metrics"]))
    return RunPlan(
        mode="train", model=info.name, model_info=info,
        model_options=_model_options(info, model_options, source), input_shape=input_shape,
        source=source, strategy=strategy, replicas=replicas,
        global_batch_size=a["global_batch_size"], microbatches=k,
        per_replica_batch=a["global_batch_size"] // replicas,
        precision=resolve_precision(info, a["precision"]),
        jit_compile=precision_lib.resolve_jit_compile(a["jit_compile"]),
        train_steps=steps, steps_per_loop=a["steps_per_loop"], eval_every=every,
        eval_offset=offset, checkpoint_every=a["checkpoint_every"], target=a["target"],
        model_dir=a["model_dir"], resume=a["resume"], init_checkpoint=a["init_checkpoint"],
        optimizer=a["optimizer"],
        optimizer_hparams=_optimizer_hparams(a["optimizer"], a["learning_rate"],
                                             a["optimizer_options"], steps),
        label_smoothing=a["label_smoothing"], loss=a["loss"], metrics=a["metrics"],
        seed=a["seed"], warmup=a["warmup"], verbose=a["verbose"], trace_dir=a["trace_dir"],
        arguments={k: recordable(v) for k, v in a.items() if k != "hooks"})


BENCHMARK_LEARNING_RATE = 0.005  # small and fixed: benchmark mode times steps, it does not train


def resolve_benchmark(arguments):
    """Checks `mlbench.benchmark`'s arguments and returns (RunPlan, page settings).

    The same resolvers as `resolve` (model, strategy, data, precision, input shape);
    the page's vocabulary adds `variable_update` → strategy and its default batch sizes.
    """
    a = dict(arguments)
    _check_benchmark_scalars(a)
    info = models.resolve(a["model"])
    update, device = _page_update(info.name, a)
    strategy = vu.strategy_for(update, a["num_devices"], device, a["all_reduce"])
    check_instance(info, strategy, a["precision"])
    strategy = instance_strategy(info, strategy)
    source = _benchmark_source(a, info)
    replicas, size = strategy.num_replicas_in_sync, a["batch_size"] or page.batch_size(info.name)
    options = _benchmark_model_options(info, a["data"], source)
    steps = 1 + a["num_runs"] * (a["num_warmup_batches"] + a["num_batches"])
    plan = RunPlan(
        mode="forward" if a["forward_only"] else "train", model=info.name, model_info=info,
        model_options=options, input_shape=model_input_shape(info, options, source),
        source=source, strategy=strategy, replicas=replicas,
        global_batch_size=size * replicas, microbatches=1, per_replica_batch=size,
        precision=resolve_precision(info, a["precision"]),
        jit_compile=precision_lib.resolve_jit_compile(a["jit_compile"]), train_steps=steps,
        steps_per_loop=1, eval_every=0, eval_offset=0, checkpoint_every=0, target=None,
        model_dir=None, resume=False, init_checkpoint=None, optimizer="sgd",
        optimizer_hparams=optimizers.hyperparameters("sgd", BENCHMARK_LEARNING_RATE,
                                                     momentum=0.9),
        label_smoothing=0.0, loss=None, metrics=None, seed=a["seed"], warmup=False,
        verbose=a["verbose"], trace_dir=a["trace_dir"],
        arguments={k: recordable(v) for k, v in dict(a, batch_size=size).items()})
    return plan, {"batch_size": size, "variable_update": update,
                  "local_parameter_device": device}


def _check_benchmark_scalars(a):
    if not models.is_own(a["model"]):
        models.info(a["model"])
    if a["data"] not in ("synthetic", "real"):
        data_lib.check_name(a["data"])
    if a["data"] == "real" and not a["data_dir"]:
        raise ValueError("`data` 'real' needs `data_dir` (ImageNet-format TFRecords).")
    if a["optimizer"] != "sgd":
        raise ValueError(f"`optimizer` ({a['optimizer']!r}): benchmark mode uses 'sgd', "
                         "as the page.")
    for name, low in (("num_batches", 1), ("num_runs", 1), ("num_warmup_batches", 0)):
        if not isinstance(a[name], int) or isinstance(a[name], bool) or a[name] < low:
            raise ValueError(f"`{name}` ({a[name]!r}) must be an integer >= {low}.")
    if a["batch_size"] is not None:
        check_positive_int("batch_size", a["batch_size"])
    check_positive_int("num_devices", a["num_devices"])
    precision_lib.resolve_precision(a["precision"])
    precision_lib.resolve_jit_compile(a["jit_compile"])
    strategies.validate_strategy_name("mirrored", a["all_reduce"])


def _page_update(name, a):
    """(variable_update, local_parameter_device): the page's for the model unless given;
    'gpu' means the first accelerator, so without one it is the CPU."""
    default_update, default_device = page.variable_update(name)
    update = a["variable_update"] or default_update
    device = a["local_parameter_device"] or default_device
    vu.validate(update, device)
    strategies.devices(a["num_devices"])  # a clear error before any strategy exists
    gpus = tf.config.list_physical_devices("GPU")
    return update, device if device == "cpu" or gpus else "cpu"


def _benchmark_source(a, info):
    """'synthetic' (on-device tensors shaped like the model's input), 'real' (ImageNet
    TFRecords in `data_dir`, the page's word), or any data `train` takes."""
    if a["data"] == "synthetic":
        if info.input_shape is None:
            raise ValueError(f"`model` ({info.name!r}) has no fixed input shape to shape "
                             "synthetic data from; register it with `input_shape=`, or "
                             "give `data`.")
        classes = info.output_width or a["num_classes"]
        return data_lib.get("synthetic", model_info=info, num_classes=classes)
    name = "imagenet" if a["data"] == "real" else a["data"]
    return data_lib.get(name, data_dir=a["data_dir"], model_info=info,
                        num_classes=a["num_classes"])


def _benchmark_model_options(info, data, source):
    """Test-sized 'real' records smaller than the model's default input set its size."""
    if (data != "real" or info.kind != "image" or info.own
            or tuple(source.input_shape) == tuple(info.input_shape)):
        return {}
    return {"image_size": source.input_shape[0]}


def resolve_precision(info, precision):
    """'auto' for a model instance means the policy it was built under."""
    if info.instance is not None and precision == "auto":
        return info.policy
    return precision_lib.resolve_precision(precision)


def check_instance(info, strategy, precision):
    """A model instance exists already: one device, and the policy it was built under."""
    if info.instance is None:
        return
    build_it = ("pass a function that builds it instead (e.g. model=make_model, not "
                "make_model()), so mlbench builds it under the strategy's scope and policy")
    if strategy.num_replicas_in_sync > 1 or strategies.is_parameter_server(strategy):
        raise ValueError(f"`model` (the tf_keras.Model {info.name!r}) was built on one "
                         f"device; {strategies.describe(strategy)['strategy']} with "
                         f"{strategy.num_replicas_in_sync} replicas needs its variables made "
                         f"under its scope: {build_it}.")
    if precision != "auto" and precision_lib.resolve_precision(precision) != info.policy:
        raise ValueError(f"`precision` ({precision!r}) differs from the dtype policy "
                         f"{info.policy!r} the tf_keras.Model {info.name!r} was built "
                         f"under: {build_it}, or give precision={info.policy!r}.")


def instance_strategy(info, strategy):
    """A model instance's variables belong to the default strategy (made outside any
    scope): its optimizer and steps must live there too (another one-device strategy's
    scope refuses to make its optimizer slots)."""
    return tf.distribute.get_strategy() if info.instance is not None else strategy


def check_labels(info, source, loss):
    """Class labels of your own data fit the model's outputs; regression targets need a
    loss that takes them."""
    if not info.own or not task_lib.classifies(loss):
        return
    if getattr(source, "integer_labels", True) is False:
        raise ValueError(f"`data` ({short(source)}) has floating-point labels, but `loss` "
                         f"({loss!r}) is classification (integer labels): give a loss for "
                         "them, e.g. loss='mse'.")
    label_range, width = getattr(source, "label_range", None), info.output_width
    if label_range and (label_range[0] < 0 or width and label_range[1] >= width):
        raise ValueError(f"`data` labels span {label_range[0]}..{label_range[1]}, but `model` "
                         f"({info.name!r}) has {width} outputs: expected class labels in "
                         f"0..{(width or 1) - 1}.")


def _check_scalars(a):
    missing = [k for k in ("model", "data", "global_batch_size") if a[k] is None]
    if missing:
        raise ValueError(f"train() needs {missing} (as arguments or gin bindings `train.*`).")
    if not models.is_own(a["model"]):
        models.info(a["model"])
    data_lib.check_name(a["data"])
    task_lib.check_metrics(a["loss"], a["metrics"])
    if a["label_smoothing"] and not task_lib.classifies(a["loss"]):
        raise ValueError(f"`label_smoothing` ({a['label_smoothing']!r}) is for the default "
                         f"classification loss, not `loss` ({short(a['loss'])}).")
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
                         f"replicas × gradient_accumulation_steps ({replicas}×{k}).")


def model_input_shape(info, model_options, source):
    """The model's input shape: its registry shape, or the `image_size` the user set.

    Image data of another shape is adapted to it (resized, channels repeated or
    averaged), as tf_cnn_benchmarks resized ImageNet to each model's size.
    """
    if info.own:
        return _own_input_shape(info, source)
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


def _own_input_shape(info, source):
    """Your own model's input shape, and data that fits it (images are adapted)."""
    spec = getattr(source, "train_element_spec", None)
    features = spec[0] if spec is not None else None
    if (info.input_shape is not None and isinstance(features, tf.TensorSpec)
            and features.shape.rank == len(info.input_shape) + 1):
        raise ValueError(f"`data` yields batches (features of shape {features.shape}) for "
                         f"`model` ({info.name!r}), which takes examples of shape "
                         f"{info.input_shape}: give the dataset unbatched "
                         "(`dataset.unbatch()`); mlbench batches per replica.")
    if info.input_shape is None or source.input_shape is None:
        return info.input_shape or source.input_shape
    fits = tuple(source.input_shape) == tuple(info.input_shape)
    if not fits and not (info.kind == "image" and source.kind == "image"):
        raise ValueError(f"`data` ({short(source)}, examples of shape "
                         f"{tuple(source.input_shape)}) does not fit `model` ({info.name!r}), "
                         f"which takes inputs of shape {tuple(info.input_shape)}.")
    return tuple(info.input_shape)


def _model_options(info, model_options, source):
    options = dict(model_options)
    if info.own:
        if model_options and info.source == models.own.SOURCE:
            raise ValueError(f"`model_options` ({model_options!r}): your own model "
                             f"({info.name!r}) takes none; build it as you want it.")
        return options
    if info.kind == "bert" and getattr(source, "vocab_size", None):
        options.setdefault("vocab_size", source.vocab_size)  # the data's vocabulary
    if info.kind == "vector":
        options.setdefault("input_dim", int(source.input_shape[0]))
    return options


def _lengths(a, source):
    """Epochs → steps with the source's train-set size: (steps, eval_every, eval_offset)."""
    needs_size = a["train_epochs"] is not None or a["eval_every_epochs"] is not None
    if needs_size and not source.num_train_examples:
        given = (f"`train_epochs` ({a['train_epochs']!r})" if a["train_epochs"] is not None
                 else f"`eval_every_epochs` ({a['eval_every_epochs']!r})")
        raise ValueError(f"{given} needs a known number of train examples; `data` "
                         f"({short(a['data'])}) has an infinite or unknown cardinality: "
                         "give `train_steps` (and `eval_every`) instead.")
    per_epoch = source.num_train_examples / a["global_batch_size"] if needs_size else None
    steps = (a["train_steps"] if a["train_steps"] is not None
             else max(1, math.ceil(a["train_epochs"] * per_epoch)))
    every, offset = a["eval_every"] or 0, 0
    if a["eval_every_epochs"] is not None:
        every = max(1, round(a["eval_every_epochs"] * per_epoch))
        offset = round(a["eval_offset_epochs"] * per_epoch)
    if not source.has_eval:
        every = 0  # no eval set (synthetic data): no evals, not a failure at the end
    return steps, every, offset


def _check_target(target, source, produced):
    """A target names metrics the run produces, and the run has an eval set to meet it."""
    if target is None:
        return
    if not isinstance(target, dict) or not target:
        raise ValueError(f"`target` ({target!r}) must be a dict such as {{'top1': 0.97}}.")
    unknown = sorted(set(target) - set(produced))
    if unknown:
        raise ValueError(f"`target` ({target!r}) names {unknown}, which this run does not "
                         f"produce; its metrics are {list(produced)}.")
    bad = {k: v for k, v in target.items() if isinstance(v, bool) or
           not isinstance(v, (int, float))}
    if bad:
        raise ValueError(f"`target` ({target!r}): values must be numbers; {bad} are not.")
    if not source.has_eval:
        what = "synthetic" if source.on_device else "no eval_data was given"
        raise ValueError(f"`target` ({target!r}) needs an eval set; data {source.name!r} "
                         f"({what}) has none.")


def _optimizer_hparams(name, learning_rate, options, train_steps):
    options = dict(options or {})
    if options.get("schedule", "constant") != "constant":
        options.setdefault("decay_steps", train_steps)
    return optimizers.hyperparameters(name, learning_rate, **options)
