"""`train(...)`: validate → resolve → build parts → run the loop → TrainResult.

Gin configures one root, `mlbench.train` (this module's `run_train`), and the
factories it calls (`mlbench.models.get`, `mlbench.optimizer`).
"""
import inspect
import math
import os
import tempfile

import gin
import tensorflow as tf
import tf_keras as keras

from mlbench import config as gin_config
from mlbench import data as data_lib
from mlbench import distribute, models, optimizers
from mlbench import precision as precision_lib
from mlbench.results import TrainResult
from mlbench.training import task as task_lib
from mlbench.training.loop import Hooks, Loop, LoopConfig
from mlbench.training.step import TrainStep
from mlbench.training.warmup import make_warmup


def train(gin_files=(), gin_bindings=(), **kwargs):
    """Trains a model; see `run_train` for every argument.

    Args:
      gin_files: gin files to parse first (searched as given, then under `gin/`).
      gin_bindings: extra bindings such as "train.train_steps = 100".
      **kwargs: arguments of `run_train`; explicit ones override gin.

    Returns:
      TrainResult.
    """
    known = inspect.signature(run_train).parameters
    unknown = sorted(set(kwargs) - set(known))
    if unknown:
        raise TypeError(f"train() got unknown argument(s) {unknown}; known: {sorted(known)}.")
    gin_config.parse(gin_files, gin_bindings)
    return run_train(**kwargs)


@gin.configurable("train", module="mlbench")
def run_train(model=None, data=None, global_batch_size=None, precision="auto",
              jit_compile="auto", gradient_accumulation_steps=1, strategy="auto",
              num_devices=None, all_reduce="auto", train_steps=None, train_epochs=None,
              eval_every=None, eval_every_epochs=None, steps_per_loop=100, target=None,
              model_dir=None, seed=0, optimizer="sgd", learning_rate=0.1,
              optimizer_options=None, model_options=None, data_dir=None, data_options=None,
              label_smoothing=0.0, checkpoint_every=0, eval_offset_epochs=0, warmup=False,
              init_checkpoint=None, hooks=None, verbose=True):
    """Trains `model` on `data` with the mlbench loop and returns a TrainResult.

    Args:
      model: a name from `mlbench.models.list_models()`.
      data: a name from `mlbench.data.NAMES` or a DataSource.
      global_batch_size: examples per optimizer step, over all replicas and micro-batches.
      precision: 'float32' | 'mixed_float16' | 'mixed_bfloat16' | 'auto'.
      jit_compile: True | False | 'auto' (XLA on GPU/TPU, off on CPU).
      gradient_accumulation_steps: micro-batches per replica per step (one update per step).
      strategy: a name from `mlbench.distribute.STRATEGIES` or a tf.distribute.Strategy.
      num_devices / all_reduce: devices and reduction for 'auto'/'mirrored'/'central_storage'.
      train_steps / train_epochs: length of the run (give exactly one).
      eval_every / eval_every_epochs: eval cadence in steps or epochs (default: at the end).
      steps_per_loop: steps per host round trip.
      target: {metric: value}, e.g. {"top1": 0.97}; stop at the first eval that meets it.
      model_dir: checkpoints (resumed from automatically), summaries, configs; parents are created.
      seed: seeds weights and data order.
      optimizer / learning_rate / optimizer_options: see `mlbench.optimizers.build`.
      model_options / data_dir / data_options: passed to the model factory / data source.
      label_smoothing: for classification losses.
      checkpoint_every: steps between checkpoints (default: at each eval and the end).
      eval_offset_epochs: with `eval_every_epochs`, evals at offset + k·every epochs (MLPerf).
      warmup: compile and warm up on zeros before the run clock starts, then restore the
        initial state (compile time stays out of `time_to_quality_s`).
      init_checkpoint: weights to start from when `model_dir` has no checkpoint yet (a
        Model Garden BERT pretrainer checkpoint, or an mlbench one).
      hooks: a `mlbench.training.loop.Hooks` receiving run events (MLPerf logging).
      verbose: print progress lines.
    """
    args = dict(locals())
    _validate_names(args)
    model_info = models.info(model)
    strategy_obj = distribute.get_strategy(strategy, num_devices, all_reduce)
    k = gradient_accumulation_steps
    _validate_batch(global_batch_size, strategy_obj.num_replicas_in_sync, k)
    source = data_lib.get(data, data_dir=data_dir, model_info=model_info,
                          **(data_options or {}))
    steps, every, offset = _resolve_lengths(train_steps, train_epochs, eval_every,
                                            eval_every_epochs, eval_offset_epochs, source,
                                            global_batch_size)
    policy = precision_lib.resolve_precision(precision)
    jit = precision_lib.resolve_jit_compile(jit_compile)
    model_dir = _prepare_model_dir(model_dir)
    keras.utils.set_random_seed(seed)
    parts = _build_parts(strategy_obj, model, model_info, source, policy, optimizer,
                         learning_rate, optimizer_options, model_options, label_smoothing, steps)
    step = TrainStep(strategy_obj, parts["model"], parts["optimizer"], parts["task"],
                     global_batch_size, k, jit)
    checkpoint = tf.train.Checkpoint(model=parts["model"], optimizer=parts["optimizer"])
    if not _restore(checkpoint, model_dir) and init_checkpoint:
        _warm_start(parts["model"], init_checkpoint)
    inputs = _train_inputs(strategy_obj, source, global_batch_size, seed, step)
    loop_config = LoopConfig(train_steps=steps, steps_per_loop=steps_per_loop, eval_every=every,
                             eval_offset=offset,
                             target=target, checkpoint_every=checkpoint_every,
                             model_dir=model_dir, examples_per_step=global_batch_size,
                             log=print if verbose else (lambda _: None))
    make_eval = lambda: _eval_inputs(strategy_obj, source, global_batch_size)  # noqa: E731
    per_replica = global_batch_size // strategy_obj.num_replicas_in_sync
    if warmup:
        loop_config.warmup = make_warmup(strategy_obj, step, inputs,
                                         None if source.on_device else make_eval, per_replica)
    ran = dict(precision=policy, jit_compile=jit, microbatches=k,
               optimizer=parts["hyperparameters"], **distribute.describe(strategy_obj))
    gin_config.write(model_dir)
    hooks = hooks or Hooks()
    hooks.on_configured(dict(
        global_batch_size=global_batch_size, gradient_accumulation_steps=k, train_steps=steps,
        num_train_examples=source.num_train_examples, num_eval_examples=source.num_eval_examples,
        seed=seed, optimizer=parts["hyperparameters"], model=model, target=target,
        label_smoothing=label_smoothing))
    outcome = Loop(loop_config, step, inputs, make_eval, checkpoint, hooks).run()
    ran["jit_compile"] = step.jit_compile  # False if XLA refused the step
    gin_config.write_operative(model_dir)
    return _result(outcome, parts, args, ran, model_dir, verbose)


def precision_lib_resolve(name):
    return precision_lib.resolve_precision(name)


def _resolve_jit(jit_compile):
    return precision_lib.resolve_jit_compile(jit_compile)


def _validate_names(args):
    """Checks every name and scalar before anything is built or written."""
    if args["model"] is None or args["data"] is None or args["global_batch_size"] is None:
        missing = [k for k in ("model", "data", "global_batch_size") if args[k] is None]
        raise ValueError(f"train() needs {missing}.")
    models.info(args["model"])
    data_lib.check_name(args["data"])
    precision_lib.resolve_precision(args["precision"])
    precision_lib.resolve_jit_compile(args["jit_compile"])
    distribute.validate_strategy_name(args["strategy"], args["all_reduce"])
    if args["optimizer"] not in optimizers.OPTIMIZERS:
        raise ValueError(f"`optimizer` ({args['optimizer']!r}) must be one of "
                         f"{list(optimizers.OPTIMIZERS)}.")
    _check_positive_int("gradient_accumulation_steps", args["gradient_accumulation_steps"])
    _check_positive_int("steps_per_loop", args["steps_per_loop"])
    _check_lengths(args)
    _check_model_dir(args["model_dir"])


def _check_positive_int(name, value):
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"`{name}` ({value!r}) must be an integer >= 1.")


def _check_lengths(args):
    steps, epochs = args["train_steps"], args["train_epochs"]
    if (steps is None) == (epochs is None):
        raise ValueError(f"Give exactly one of `train_steps` ({steps!r}) and "
                         f"`train_epochs` ({epochs!r}).")
    if steps is not None:
        _check_positive_int("train_steps", steps)
    elif not epochs > 0:
        raise ValueError(f"`train_epochs` ({epochs!r}) must be > 0.")
    if args["eval_every"] is not None and args["eval_every_epochs"] is not None:
        raise ValueError("Give at most one of `eval_every` and `eval_every_epochs`.")


def _check_model_dir(model_dir):
    """Missing parents are fine (they are created); an unwritable location is not."""
    if model_dir is None:
        return
    path = os.path.abspath(model_dir)
    existing = path
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise ValueError(f"`model_dir` ({model_dir!r}): {existing!r} is a file, not a "
                         "directory; expected a directory path.")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"`model_dir` ({model_dir!r}): {existing!r} is not writable.")


def _validate_batch(global_batch_size, replicas, k):
    _check_positive_int("global_batch_size", global_batch_size)
    if global_batch_size % (replicas * k):
        raise ValueError(f"`global_batch_size` ({global_batch_size}) must be divisible by "
                         f"replicas × microbatches ({replicas}×{k}).")


def _resolve_lengths(train_steps, train_epochs, eval_every, eval_every_epochs, eval_offset_epochs,
                     source, global_batch_size):
    """Converts epochs to steps with the source's train-set size: (steps, every, offset)."""
    needs_size = train_epochs is not None or eval_every_epochs is not None
    if needs_size and not source.num_train_examples:
        raise ValueError(f"Epoch-based lengths need a known train-set size; data "
                         f"{source.name!r} has none: use `train_steps`/`eval_every`.")
    per_epoch = (source.num_train_examples / global_batch_size) if needs_size else None
    steps = train_steps if train_steps is not None else max(1, math.ceil(train_epochs * per_epoch))
    offset = 0
    if eval_every_epochs is not None:
        eval_every = max(1, round(eval_every_epochs * per_epoch))
        offset = round(eval_offset_epochs * per_epoch)
    return steps, eval_every or 0, offset


def _prepare_model_dir(model_dir):
    """Creates the chief's model_dir; other workers get a private temporary one.

    Under MultiWorkerMirroredStrategy every worker must take part in saving
    (the save is collective), so non-chief workers save too, but only to
    throw-away directories (TF's recommended pattern).
    """
    if not model_dir:
        return None
    if not distribute.is_chief():
        return tempfile.mkdtemp(prefix="mlbench_worker_")
    os.makedirs(model_dir, exist_ok=True)
    return model_dir


def _build_parts(strategy, name, model_info, source, policy, optimizer, learning_rate,
                 optimizer_options, model_options, label_smoothing, train_steps):
    """Model, optimizer and task under the strategy's scope and the precision policy."""
    options = dict(optimizer_options or {})
    if options.get("schedule", "constant") != "constant":
        options.setdefault("decay_steps", train_steps)
    model_options = dict(model_options or {})
    if model_info.kind == "bert" and getattr(source, "vocab_size", None):
        model_options.setdefault("vocab_size", source.vocab_size)  # the data's vocabulary
    with strategy.scope():
        with precision_lib.policy_scope(policy):
            model = models.get(name, num_classes=max(source.num_classes, 1), **model_options)
        opt, hyperparameters = optimizers.build(optimizer, learning_rate, **options)
        opt = precision_lib.wrap_optimizer(opt, policy)
    task = task_lib.for_model(model_info.kind, source.num_classes, label_smoothing)
    return {"model": model, "optimizer": opt, "task": task, "hyperparameters": hyperparameters}


def _restore(checkpoint, model_dir):
    """Resumes from the latest checkpoint in `model_dir`; True if there was one."""
    if not model_dir:
        return False
    latest = tf.train.latest_checkpoint(os.path.join(model_dir, "checkpoints"))
    if latest:
        checkpoint.restore(latest)
    return bool(latest)


def _warm_start(model, path):
    """Model weights only: Model Garden pretrainer items (encoder, masked_lm) or mlbench's."""
    items = getattr(model, "checkpoint_items", None) or {"model": model}
    if not tf.io.gfile.exists(path + ".index"):
        raise ValueError(f"`init_checkpoint` ({path!r}) has no {path + '.index'}.")
    tf.train.Checkpoint(**items).read(path).expect_partial()


def _train_inputs(strategy, source, global_batch_size, seed, step):
    """Synthetic data: per-replica values on the devices; otherwise a distributed iterator.

    On resume the pipeline skips the batches already consumed, so N + N steps
    see the same data as 2N straight steps.
    """
    per_replica = global_batch_size // strategy.num_replicas_in_sync
    if source.on_device:
        return source.distribute(strategy, per_replica, seed)
    done = int(step.optimizer.iterations.numpy())
    dataset = strategy.distribute_datasets_from_function(
        lambda ctx: source.train_dataset(ctx, per_replica, seed, skip_batches=done))
    return iter(dataset)


def _eval_inputs(strategy, source, global_batch_size):
    per_replica = global_batch_size // strategy.num_replicas_in_sync
    return strategy.distribute_datasets_from_function(
        lambda ctx: source.eval_dataset(ctx, per_replica))


def _result(outcome, parts, args, ran, model_dir, verbose):
    config = {k: v for k, v in args.items() if k != "hooks"}
    result = TrainResult(model=parts["model"], optimizer=parts["optimizer"], final_metrics=outcome.final_metrics,
                         reached_target=outcome.reached_target,
                         time_to_quality_s=outcome.time_to_quality_s, steps=outcome.steps,
                         examples_per_second=outcome.examples_per_second,
                         history=outcome.history, config=config, ran=ran, model_dir=model_dir,
                         compile_s=outcome.compile_s, skipped_steps=outcome.skipped_steps,
                         run_seconds=outcome.run_seconds)
    if model_dir:
        result.to_json(os.path.join(model_dir, "result.json"))
    if verbose:
        print(format_summary(result))
    return result


def format_summary(result):
    ttq = (f"{result.time_to_quality_s:.1f}s" if result.time_to_quality_s is not None
           else "not reached")
    eps = result.examples_per_second
    return (f"RESULT reached_target={result.reached_target} time_to_quality={ttq} "
            f"steps={result.steps} examples/sec={eps if eps is None else round(eps, 1)} "
            f"metrics={ {k: round(v, 4) for k, v in result.final_metrics.items()} } "
            f"ran={ {k: v for k, v in result.ran.items() if k != 'optimizer'} }")
