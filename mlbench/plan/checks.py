"""Every check of bad input, raised before anything is built or written: each error names
the argument and its value and says what is expected."""
import os

import tensorflow as tf

from mlbench import data as data_lib
from mlbench import models
from mlbench.models import precision as precision_lib
from mlbench.distribute import cluster, strategies
from mlbench.reprs import short
from mlbench.training import callbacks as callbacks_lib
from mlbench.training import task as task_lib
from mlbench.training import dirlock
from mlbench.training.checkpoints import latest_checkpoint


def check_scalars(a):
    missing = [k for k in ("model", "data", "global_batch_size") if getattr(a, k) is None]
    if missing:
        raise ValueError(f"train() needs {missing} (as arguments or gin bindings `train.*`).")
    if not models.is_own(a.model):
        models.info(a.model)
    data_lib.check_name(a.data)
    task_lib.check_metrics(a.loss, a.metrics)
    callbacks_lib.check_callbacks(a.callbacks)
    if a.label_smoothing and not task_lib.classifies(a.loss):
        raise ValueError(f"`label_smoothing` ({a.label_smoothing!r}) is for the default "
                         f"classification loss, not `loss` ({short(a.loss)}).")
    precision_lib.resolve_precision(a.precision)
    precision_lib.resolve_jit_compile(a.jit_compile)
    strategies.validate_strategy_name(a.strategy, a.all_reduce)
    check_positive_int("gradient_accumulation_steps", a.gradient_accumulation_steps)
    check_positive_int("steps_per_loop", a.steps_per_loop)
    if not isinstance(a.checkpoint_every, int) or a.checkpoint_every < 0:
        raise ValueError(f"`checkpoint_every` ({a.checkpoint_every!r}) must be an integer >= 0.")
    _check_lengths(a)
    _check_cluster(a)
    check_model_dir(a.model_dir, a.resume)
    check_init_checkpoint(a.init_checkpoint)


def check_init_checkpoint(path):
    """A checkpoint prefix (`.../ckpt-N`) whose `.index` file exists."""
    if path is not None and not tf.io.gfile.exists(path + ".index"):
        raise ValueError(f"`init_checkpoint` ({path!r}) has no {path + '.index'}: expected a "
                         "checkpoint prefix such as 'run/checkpoints/ckpt-100'.")


def check_benchmark_scalars(a):
    if not models.is_own(a.model):
        models.info(a.model)
    if a.data not in ("synthetic", "real"):
        data_lib.check_name(a.data)
    if a.data == "real" and not a.data_dir:
        raise ValueError("`data` 'real' needs `data_dir` (ImageNet-format TFRecords).")
    if a.optimizer != "sgd":
        raise ValueError(f"`optimizer` ({a.optimizer!r}): benchmark mode uses 'sgd', "
                         "as the page.")
    for name, low in (("num_batches", 1), ("num_runs", 1), ("num_warmup_batches", 0)):
        value = getattr(a, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"`{name}` ({value!r}) must be an integer >= {low}.")
    if a.batch_size is not None:
        check_positive_int("batch_size", a.batch_size)
    check_positive_int("num_devices", a.num_devices)
    precision_lib.resolve_precision(a.precision)
    precision_lib.resolve_jit_compile(a.jit_compile)
    strategies.validate_strategy_name("mirrored", a.all_reduce)


def _check_cluster(a):
    """ps tasks in TF_CONFIG need a strategy that uses them, and the reverse."""
    config = cluster.parse_tf_config()
    uses_ps = a.strategy in ("auto", "parameter_server")
    if cluster.has_ps(config):
        cluster.check_parameter_server_cluster(config)
    if cluster.has_ps(config) and not uses_ps:
        raise ValueError(f"`strategy` ({a.strategy!r}) cannot use the ps tasks in "
                         f"TF_CONFIG ({config['cluster']['ps']}); use 'parameter_server' "
                         "(or 'auto'), or launch without --num_ps.")
    if cluster.has_ps(config) and a.warmup:
        raise ValueError("`warmup` (True) is not supported with parameter servers "
                         "(the warm-up runs on the chief's own devices).")


def check_positive_int(name, value):
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"`{name}` ({value!r}) must be an integer >= 1.")


def _check_lengths(a):
    steps, epochs = a.train_steps, a.train_epochs
    if a.steps_per_epoch is not None:
        check_positive_int("steps_per_epoch", a.steps_per_epoch)
    if (steps is None) == (epochs is None):
        raise ValueError(f"Give exactly one of `train_steps` ({steps!r}) and "
                         f"`train_epochs` ({epochs!r}).")
    if steps is not None:
        check_positive_int("train_steps", steps)
    elif not epochs > 0:
        raise ValueError(f"`train_epochs` ({epochs!r}) must be > 0.")
    if a.eval_every is not None and a.eval_every_epochs is not None:
        raise ValueError(f"Give at most one of `eval_every` ({a.eval_every!r}) and "
                         f"`eval_every_epochs` ({a.eval_every_epochs!r}).")


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
    if os.path.isdir(model_dir) and cluster.is_chief():
        busy = dirlock.holder(model_dir)  # None: free; else who holds it ({} unknown)
        if busy is not None:
            raise dirlock.RunDirectoryBusy(dirlock.busy_message(model_dir, busy))
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


def check_instance(info, strategy, precision):
    """A model instance exists already: one device, and the policy it was built under."""
    if info.instance is None:
        return
    build_it = ("pass a function that builds it instead (e.g. model=make_model, not "
                "make_model()), so mlbench builds it under the strategy's scope and policy")
    if strategy.num_replicas_in_sync > 1 or strategies.is_parameter_server(strategy):
        raise ValueError(f"`model` (the built model {info.name!r}) was built on one "
                         f"device; {strategies.facts(strategy)['strategy']} with "
                         f"{strategy.num_replicas_in_sync} replicas needs its variables made "
                         f"under its scope: {build_it}.")
    if precision != "auto" and precision_lib.resolve_precision(precision) != info.policy:
        raise ValueError(f"`precision` ({precision!r}) differs from the dtype policy "
                         f"{info.policy!r} the model {info.name!r} was built "
                         f"under: {build_it}, or give precision={info.policy!r}.")


def check_keep_best(keep_best, produced, source):
    """`keep_best` is {metric: 'max' | 'min'}, one metric the run produces, with evals."""
    if keep_best is None:
        return
    if not isinstance(keep_best, dict) or len(keep_best) != 1 or \
            list(keep_best.values())[0] not in ("max", "min"):
        raise ValueError(f"`keep_best` ({keep_best!r}) must be one {{metric: 'max' | 'min'}}, "
                         "e.g. {'top1': 'max'} or {'eval_loss': 'min'}.")
    metric = next(iter(keep_best))
    if metric not in produced:
        raise ValueError(f"`keep_best` ({keep_best!r}) names {metric!r}, which this run does "
                         f"not produce; its metrics are {list(produced)}.")
    if not source.has_eval:
        raise ValueError(f"`keep_best` ({keep_best!r}) needs an eval set; data "
                         f"{source.name!r} has none.")


def check_monitors(callbacks, produced, source, trained=()):
    callbacks_lib.check_monitors(callbacks, produced, source.has_eval, trained)


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


def is_fraction(metric):
    """Metrics bounded by [0, 1] (a target outside can never be met)."""
    return metric in ("top1", "top5", "auc", "precision", "recall") or \
        metric.endswith("accuracy")


def check_target(target, source, produced):
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
    out_of_range = {k: v for k, v in target.items() if is_fraction(k) and not 0 <= v <= 1}
    if out_of_range:
        raise ValueError(f"`target` ({target!r}): {out_of_range} can never be met: "
                         "accuracies, AUC, precision and recall lie between 0 and 1.")
    if not source.has_eval:
        what = "synthetic" if source.on_device else "no eval_data was given"
        raise ValueError(f"`target` ({target!r}) needs an eval set; data {source.name!r} "
                         f"({what}) has none.")
