"""`resolve(arguments) -> RunPlan` for `train` and `mlperf`, and gin's `train.*` root."""
import dataclasses
import math

import gin

from mlbench import data as data_lib
from mlbench.plan.arguments import TrainArguments
from mlbench import models
from mlbench.plan import rundir
from mlbench.distribute import strategies
from mlbench.plan import checks, resolvers, same_run
from mlbench.plan import objective as objective_lib
from mlbench.plan.record import Cadence, RunDirectory, RunPlan
from mlbench.reprs import short
from mlbench.training import multi_output
from mlbench.training import task as task_lib


@gin.configurable("train", module="mlbench")
def gin_train_arguments(**arguments):
    """The `train.*` values bound in gin (registered under gin's name `train`).

    gin hands a **kwargs configurable exactly what was bound; `train_arguments`
    refuses names that are no argument of `mlbench.train`.
    """
    return arguments


@gin.configurable("optimizer_options", module="mlbench")
def gin_optimizer_options(**options):
    """The `optimizer_options.*` values bound in gin: one binding per optimizer option
    (`optimizer_options.warmup_steps = 22`), so a file that includes another changes one
    option without restating the rest. The optimizer refuses names it does not take."""
    return options


def train_arguments(explicit, defaults):
    """The run's arguments: `defaults`, then gin's `train.*` bindings, then `explicit`.

    `optimizer_options` merges key by key: gin's `train.optimizer_options`, then gin's
    `optimizer_options.<key>` bindings, then the explicit ones.
    """
    bound = gin_train_arguments()
    unknown = sorted(set(bound) - set(defaults))
    if unknown:
        raise ValueError(f"gin binding(s) {['train.' + n for n in unknown]} name no argument "
                         f"of `mlbench.train`; known: {sorted(defaults)}.")
    merged = {**defaults, **_without_replaced(bound, explicit), **explicit}
    options = {**(bound.get("optimizer_options") or {}), **gin_optimizer_options(),
               **(explicit.get("optimizer_options") or {})}
    if options:
        merged["optimizer_options"] = options
    return TrainArguments(**merged)


# An explicit length or cadence replaces gin's choice of unit: `--train_steps=N` over a gin
# file's `train.train_epochs` is N steps, not a conflict (explicit flags win).
_ONE_OF = (("train_steps", "train_epochs"), ("eval_every", "eval_every_epochs"))


def _without_replaced(bound, explicit):
    """gin's bindings less the ones an explicit argument of the same pair replaces."""
    dropped = {other for pair in _ONE_OF for given, other in (pair, pair[::-1])
               if explicit.get(given) is not None and other not in explicit}
    return {k: v for k, v in bound.items() if k not in dropped}


def resolve(arguments):
    """Checks `arguments` (all of `mlbench.train`'s) and returns the RunPlan.

    Raises:
      ValueError: naming the argument and its value, before anything is built or written.
    """
    if not isinstance(arguments, TrainArguments):
        raise TypeError(f"`resolve` takes a TrainArguments record, not "
                        f"{type(arguments).__name__}: build one with `train_arguments`.")
    a = arguments
    checks.check_scalars(a)
    info = models.resolve(a.model)
    strategy = strategies.get_strategy(a.strategy, a.num_devices, a.all_reduce)
    checks.check_batch(a.global_batch_size, strategy.num_replicas_in_sync,
                       a.gradient_accumulation_steps)
    checks.check_instance(info, strategy, a.precision)
    source = data_lib.get(a.data, data_dir=a.data_dir,
                          model_info=_sized(info, a.model_options or {}),
                          eval_data=a.eval_data, **(a.data_options or {}))
    model = resolvers.model_plan(info, dict(a.model_options or {}), source)
    steps, every, offset, epoch = _lengths(a, source)
    objective = objective_lib.resolve(a, info, steps, source.num_train_examples)
    checks.check_labels(info, source, objective.loss)
    produced = (multi_output.produced_for(info, objective) if multi_output.is_multi(info)
                else task_lib.produced_metrics(info, objective.loss, objective.metrics,
                                               objective.weighted_metrics))
    checks.check_target(a.target, source, produced)
    checks.check_keep_best(a.keep_best, produced, source)
    trained = produced[:-1] if task_lib.uses_keras_task(info, objective.loss,
                                                        objective.metrics) else ()
    checks.check_monitors(a.callbacks, produced, source, trained)
    numerics = resolvers.numerics(info, a.precision, a.jit_compile)
    plan = RunPlan(
        mode="train", model=model, source=source,
        distribution=resolvers.distribution(info, strategy, a.global_batch_size,
                                            a.gradient_accumulation_steps),
        numerics=numerics,
        cadence=Cadence(steps, a.steps_per_loop, every, offset, a.checkpoint_every,
                        a.target, a.keep_best, epoch),
        directory=RunDirectory(a.model_dir, a.resume, a.init_checkpoint,
                               a.trace_dir),
        objective=objective,
        seed=a.seed, warmup=a.warmup, verbose=a.verbose,
        arguments=a,
        rebuild=rundir.rebuild_record(a, info, model, numerics.precision,
                                      getattr(source, "train_element_spec", None)))
    plan = dataclasses.replace(plan, rebuild=dataclasses.replace(
        plan.rebuild, identity=same_run.identity(plan)))
    same_run.check(plan)
    return plan


def _sized(info, model_options):
    """The model as `model_options` size it: synthetic data is made in the shape the model
    will take (`image_size=32` makes 32×32 images, not the registered size)."""
    size = model_options.get("image_size")
    if not size or info.kind != "image" or not info.input_shape:
        return info
    return dataclasses.replace(info, input_shape=(size, size, info.input_shape[-1]))


def _lengths(a, source):
    """Epochs → steps with the source's train-set size: (steps, eval_every, eval_offset,
    steps per epoch for a run counted in epochs, else 0)."""
    needs_size = (a.train_epochs is not None or a.eval_every_epochs is not None) and \
        not a.steps_per_epoch
    if needs_size and not source.num_train_examples:
        given = (f"`train_epochs` ({a.train_epochs!r})" if a.train_epochs is not None
                 else f"`eval_every_epochs` ({a.eval_every_epochs!r})")
        raise ValueError(f"{given} needs a known number of train examples; `data` "
                         f"({short(a.data)}) has an infinite or unknown cardinality: "
                         "give `train_steps` (and `eval_every`) instead.")
    per_epoch = a.steps_per_epoch or (source.num_train_examples / a.global_batch_size
                                      if needs_size else None)
    steps = (a.train_steps if a.train_steps is not None
             else max(1, math.ceil(a.train_epochs * per_epoch)))
    every, offset = a.eval_every or 0, 0
    if a.eval_every_epochs is not None:
        every = max(1, round(a.eval_every_epochs * per_epoch))
        offset = round(a.eval_offset_epochs * per_epoch)
    if not source.has_eval:
        every = 0  # no eval set (synthetic data): no evals, not a failure at the end
    epoch = max(1, round(per_epoch)) if a.train_epochs is not None else 0
    return steps, every, offset, epoch
