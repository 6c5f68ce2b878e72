"""The run's loss, metrics and optimizer: from the arguments, else from the model's
compile(), else mlbench's defaults — and where each came from (`Objective.sources`,
recorded in `TrainResult.ran['objective_from']`).

An argument given to mlbench wins over compile(), as the issue of "what trains" must
have one answer; compile() wins over mlbench's defaults, as `fit` would use it.
"""
import math

from mlbench.models import recipes
from mlbench.training import optimizers
from mlbench.models.compiled import (KERAS_DEFAULT_LEARNING_RATE, CompileArgs,
                                     optimizer_spec)
from mlbench.plan.record import Objective
from mlbench.reprs import short
from mlbench.training import multi_output
from mlbench.training import task as task_lib

ARGUMENT, COMPILE, DEFAULT = "argument", "compile()", "default"


def resolve(a, info, train_steps, examples_per_epoch=None):
    """The Objective of TrainArguments `a` for model `info`; ValueError before anything
    is built when compile() set something mlbench cannot train with.
    `examples_per_epoch`: the train set's size (a recipe's warm-up is in epochs)."""
    compiled = info.compiled or CompileArgs()
    multi = multi_output.is_multi(info)
    single = (lambda value, what: value) if multi else \
        (lambda value, what: _single(value, what, info))
    loss, loss_from = _pick("loss", a.loss, single(compiled.loss, "loss"))
    metrics, metrics_from = _pick("metrics", a.metrics, single(compiled.metrics, "metrics"))
    weighted = single(compiled.weighted_metrics, "weighted_metrics")
    if multi:
        _check_each_output(info, loss, compiled.loss_weights, metrics, weighted)
    else:
        _check_loss_weights(compiled.loss_weights, info)
        if loss_from == COMPILE or metrics_from == COMPILE:
            task_lib.check_metrics(loss, metrics)
            task_lib.check_metrics(None, weighted)
    name, hparams, spec, optimizer_from, rate_from = _optimizer(a, info, compiled, train_steps,
                                                                examples_per_epoch)
    return Objective(name, hparams, a.label_smoothing, loss, metrics, keras_optimizer=spec,
                     weighted_metrics=weighted,
                     loss_weights=compiled.loss_weights if multi else None,
                     sources={"loss": loss_from, "metrics": metrics_from,
                              "optimizer": optimizer_from,
                              "learning_rate": rate_from})


def _check_each_output(info, loss, loss_weights, metrics, weighted):
    """Each output's loss and metrics exist (refused up front, naming the output)."""
    losses, _, per_metrics, per_weighted = multi_output.spread_objective(
        info, loss, loss_weights, metrics, weighted)
    for name, one_loss, m, w in zip(info.output_names, losses, per_metrics, per_weighted):
        try:
            task_lib.check_metrics(one_loss, multi_output.listed(m))
            task_lib.check_metrics(None, multi_output.listed(w))
        except ValueError as e:
            raise ValueError(f"output {name!r}: {e}") from None


def _pick(argument, given, compiled):
    if given is not None:
        return given, ARGUMENT
    if compiled is not None:
        return compiled, COMPILE
    return None, DEFAULT


def _single(value, what, info):
    """compile()'s value for a single-output model: one loss, a list of metrics (a list
    of one, as Keras takes per-output lists, is unwrapped for the loss)."""
    if value is None:
        return None
    if what == "loss" and isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]
    nested = isinstance(value, dict) or (
        isinstance(value, (list, tuple)) and
        (what == "loss" or any(isinstance(v, (list, tuple, dict)) for v in value)))
    if nested:
        raise ValueError(f"`model` ({info.name!r}) has one output but was compiled with "
                         f"per-output {what} ({short(value)}): give one loss and a list "
                         "of metrics.")
    return value


def _check_loss_weights(loss_weights, info):
    if loss_weights is None:
        return
    weights = list(loss_weights.values()) if isinstance(loss_weights, dict) else \
        list(loss_weights) if isinstance(loss_weights, (list, tuple)) else [loss_weights]
    if len(weights) != 1:
        raise ValueError(f"`model` ({info.name!r}) was compiled with loss_weights "
                         f"{loss_weights!r} for several outputs; mlbench trains "
                         "single-output models of your own.")
    if not math.isclose(float(weights[0]), 1.0):
        raise ValueError(f"`model` ({info.name!r}) was compiled with loss_weights "
                         f"{loss_weights!r}: a single output's weight only rescales the "
                         "loss; fold it into the learning rate, or compile without it.")


def _optimizer(a, info, compiled, train_steps, examples_per_epoch=None):
    """(name, hyperparameters, OptimizerSpec or None, source, the learning rate's source)."""
    given = a.optimizer
    if given is None and compiled.optimizer is not None:
        return _from_spec(a, info, compiled.optimizer, COMPILE)
    if given is not None and not isinstance(given, str):
        spec = optimizer_spec(given)
        if spec is None:
            raise ValueError(f"`optimizer` ({short(given)}) must be a name from "
                             f"{list(optimizers.OPTIMIZERS)} or a Keras optimizer object "
                             "(tf_keras or Keras 3).")
        return _from_spec(a, info, spec, ARGUMENT)
    recipe = None if info.own else recipes.for_model(info.name)
    name = given or (recipe.optimizer if recipe else "sgd")
    if name not in optimizers.OPTIMIZERS:
        raise ValueError(f"`optimizer` ({name!r}) must be one of "
                         f"{list(optimizers.OPTIMIZERS)} or a Keras optimizer object.")
    options = dict(a.optimizer_options or {})
    learning_rate, rate_from = _default_rate(a, info, name, recipe)
    if a.learning_rate is None and recipe is not None and name == recipe.optimizer:
        warmup = recipe.warmup_steps(a.global_batch_size, examples_per_epoch)
        if warmup and "warmup_steps" not in options:
            options["warmup_steps"] = warmup
            rate_from += f", warm-up {warmup} steps ({recipe.warmup_epochs:g} epochs)"
    if options.get("schedule", "constant") != "constant":
        options.setdefault("decay_steps", train_steps)
    hparams = optimizers.hyperparameters(name, learning_rate, **options)
    optimizers.check_for_keras(hparams, info.keras)
    return name, hparams, None, ARGUMENT if given else DEFAULT, rate_from


def _default_rate(a, info, name, recipe):
    """(learning rate, where it came from): the argument; else the zoo model's recipe,
    scaled to the global batch (when it trains with the recipe's optimizer); else Keras'
    default rate for the optimizer."""
    if a.learning_rate is not None:
        return a.learning_rate, ARGUMENT
    if recipe is not None and name == recipe.optimizer:
        return recipe.rate_at(a.global_batch_size), recipe.rule(a.global_batch_size)
    why = (f" (the model's recipe is for {recipe.optimizer})" if recipe is not None else "")
    return KERAS_DEFAULT_LEARNING_RATE.get(name, 0.01), f"Keras' default{why}"


def _from_spec(a, info, spec, source):
    if spec.keras != info.keras:
        raise ValueError(f"`optimizer` ({spec.cls.__module__}.{spec.cls.__name__}, from "
                         f"{'compile()' if source == COMPILE else 'the argument'}) is a "
                         f"{spec.keras} optimizer, but `model` ({info.name!r}) is a "
                         f"{info.keras} model: give an optimizer of the model's Keras.")
    if a.optimizer_options:
        raise ValueError(f"`optimizer_options` ({a.optimizer_options!r}) set a named "
                         "optimizer's options; the optimizer here is a Keras object "
                         f"({spec.cls.__name__}, from {source}): set them on it.")
    if a.learning_rate is not None:
        spec = spec.with_learning_rate(a.learning_rate)
    return (spec.name, spec.hyperparameters(), spec, source,
            ARGUMENT if a.learning_rate is not None else source)
