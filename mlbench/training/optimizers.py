"""Optimizers and LR schedules: a thin layer over Model Garden's OptimizerFactory.

Model Garden already has SGD, LARS, LAMB, AdamW and the warm-up + poly/cosine
schedules MLPerf uses; mlbench only flattens their nested config into gin-
friendly arguments and returns the hyperparameters it resolved (for logs).
"""
import dataclasses
from typing import Optional, Tuple

import tensorflow as tf
from official.modeling.optimization import optimizer_factory
from official.modeling.optimization.configs import optimization_config

from mlbench.models import keras3

OPTIMIZERS = ("sgd", "adam", "adamw", "lars", "lamb")
SCHEDULES = ("constant", "polynomial", "cosine")


def _optimizer_params(name, momentum, weight_decay, beta_1, beta_2, epsilon, exclude):
    if name == "sgd":
        return {"momentum": momentum}
    if name == "adam":
        return {"beta_1": beta_1, "beta_2": beta_2, "epsilon": epsilon}
    if name == "lars":
        return {"momentum": momentum, "weight_decay_rate": weight_decay,
                "exclude_from_weight_decay": exclude, "exclude_from_layer_adaptation": exclude}
    params = {"beta_1": beta_1, "beta_2": beta_2, "epsilon": epsilon,
              "weight_decay_rate": weight_decay, "exclude_from_weight_decay": exclude}
    if name == "lamb":
        params["exclude_from_layer_adaptation"] = exclude
    return params


def _schedule(schedule, learning_rate, decay_steps, end_learning_rate, power):
    if schedule == "constant":
        return {"type": "constant", "constant": {"learning_rate": learning_rate}}
    if not decay_steps or decay_steps < 1:
        raise ValueError(f"`decay_steps` ({decay_steps!r}) must be >= 1 for schedule {schedule!r}.")
    if schedule == "polynomial":
        return {"type": "polynomial", "polynomial": {
            "initial_learning_rate": learning_rate, "decay_steps": decay_steps,
            "end_learning_rate": end_learning_rate, "power": power}}
    return {"type": "cosine", "cosine": {"initial_learning_rate": learning_rate,
                                         "decay_steps": decay_steps}}


@dataclasses.dataclass(frozen=True)
class OptimizerHparams:
    """A named optimizer's update rule, resolved (`hyperparameters()`): what builds it,
    what MLPerf logs and the closed rules check, and what results record."""
    name: str
    learning_rate: float
    schedule: str
    decay_steps: Optional[int]
    end_learning_rate: float
    power: float
    warmup_steps: int
    momentum: float
    weight_decay: float
    beta_1: float
    beta_2: float
    epsilon: float
    exclude_from_weight_decay: Tuple[str, ...]

    def recorded(self):
        return dataclasses.asdict(self)


def hyperparameters(name="sgd", learning_rate=0.1, schedule="constant", decay_steps=None,
                    end_learning_rate=1e-4, power=1.0, warmup_steps=0, momentum=0.9,
                    weight_decay=0.0, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
                    exclude_from_weight_decay=("batch_normalization", "bias", "LayerNorm",
                                               "layer_norm")):
    """Checks and resolves flat optimizer arguments into an OptimizerHparams record.

    Pure (nothing is built), so run plans and MLPerf's closed rules can read
    the update rule before any model exists.

    Args:
      name: one of OPTIMIZERS.
      learning_rate: base (peak) learning rate.
      schedule: one of SCHEDULES; decay runs over `decay_steps` after warm-up.
      warmup_steps: linear warm-up steps from 0 (poly warm-up for LARS, as in MLPerf).
      Other arguments are the optimizer's own.
    """
    if name not in OPTIMIZERS:
        raise ValueError(f"`optimizer` ({name!r}) must be one of {list(OPTIMIZERS)}.")
    if schedule not in SCHEDULES:
        raise ValueError(f"`schedule` ({schedule!r}) must be one of {list(SCHEDULES)}.")
    if not isinstance(learning_rate, (int, float)) or learning_rate <= 0:
        raise ValueError(f"`learning_rate` ({learning_rate!r}) must be a number > 0.")
    _schedule(schedule, learning_rate, decay_steps, end_learning_rate, power)  # validates
    return OptimizerHparams(
        name=name, learning_rate=learning_rate, schedule=schedule, decay_steps=decay_steps,
        end_learning_rate=end_learning_rate, power=power, warmup_steps=warmup_steps,
        momentum=momentum, weight_decay=weight_decay, beta_1=beta_1, beta_2=beta_2,
        epsilon=epsilon, exclude_from_weight_decay=tuple(exclude_from_weight_decay))


def from_hyperparameters(h, keras=keras3.TF_KERAS):
    """The optimizer for an OptimizerHparams record: tf_keras from Model Garden's factory,
    or, for a Keras 3 model (`keras='keras3'`), Keras 3's with the same maths and LR."""
    exclude = list(h.exclude_from_weight_decay) if h.weight_decay else None
    config = {
        "optimizer": {"type": h.name, h.name: _optimizer_params(
            h.name, h.momentum, h.weight_decay, h.beta_1, h.beta_2,
            h.epsilon, exclude)},
        "learning_rate": _schedule(h.schedule, h.learning_rate, h.decay_steps,
                                   h.end_learning_rate, h.power),
    }
    if h.warmup_steps:
        kind = "polynomial" if h.name == "lars" else "linear"
        config["warmup"] = {"type": kind, kind: {"warmup_steps": h.warmup_steps}}
    factory = optimizer_factory.OptimizerFactory(optimization_config.OptimizationConfig(config))
    schedule = factory.build_learning_rate()
    if keras == keras3.KERAS_3:
        return _keras3_optimizer(h, schedule)
    return factory.build_optimizer(schedule)


# Keras 3 counterparts of Model Garden's optimizers with the same update maths (pinned by
# tests/training/test_optimizers.py against Model Garden's on the same gradients). Model Garden's
# 'adamw' clips gradients to a global norm of 1.0 before its update; so does this one.
# Keras 3 has no LARS, and its Lamb decays weights outside the trust ratio (Model Garden's
# LAMB inside it): those are refused rather than silently changing the maths.
KERAS_3_OPTIMIZERS = ("sgd", "adam", "adamw", "lamb")


def check_for_keras(h, keras):
    """Refuses, by name, an update rule Keras 3 cannot reproduce (an OptimizerHparams)."""
    if keras != keras3.KERAS_3:
        return
    if h.name not in KERAS_3_OPTIMIZERS:
        raise ValueError(f"`optimizer` ({h.name!r}) has no Keras 3 counterpart with "
                         "Model Garden's maths (Keras 3 has no LARS); for a Keras 3 model "
                         f"use one of {list(KERAS_3_OPTIMIZERS)}, or build the model with "
                         "tf_keras.")
    if h.name == "lamb" and h.weight_decay:
        raise ValueError(f"`optimizer` 'lamb' with weight_decay ({h.weight_decay!r}): "
                         "Keras 3's Lamb applies weight decay outside the layer-wise trust "
                         "ratio, unlike Model Garden's LAMB (MLPerf's); for a Keras 3 model "
                         "use weight_decay=0 or 'adamw', or build the model with tf_keras.")


def _keras3_optimizer(h, schedule):
    keras = keras3.loaded()
    check_for_keras(h, keras3.KERAS_3)
    lr = _keras3_schedule(schedule) if callable(schedule) else schedule
    adam = dict(beta_1=h.beta_1, beta_2=h.beta_2, epsilon=h.epsilon)
    if h.name == "sgd":
        return keras.optimizers.SGD(lr, momentum=h.momentum)
    if h.name == "adam":
        return keras.optimizers.Adam(lr, **adam)
    if h.name == "lamb":
        return keras.optimizers.Lamb(lr, **adam)
    optimizer = keras.optimizers.AdamW(lr, weight_decay=h.weight_decay, global_clipnorm=1.0,
                                       **adam)
    if h.weight_decay:
        optimizer.exclude_from_weight_decay(var_names=list(h.exclude_from_weight_decay))
    return optimizer


def _keras3_schedule(schedule):
    """Model Garden's schedule (plain TensorFlow maths of the step) as a Keras 3 schedule:
    the same warm-up and decay, evaluated by the same code, for both generations. The
    class is made on first use: Keras 3 is imported only by its users."""
    keras = keras3.loaded()

    class GardenSchedule(keras.optimizers.schedules.LearningRateSchedule):
        def __init__(self, inner):
            self.inner = inner

        def __call__(self, step):
            return self.inner(step)

        def get_config(self):
            return {"inner": self.inner.get_config()}
    return GardenSchedule(schedule)


def current_learning_rate(optimizer):
    """The LR at the optimizer's current step (a float), through a loss-scale wrapper."""
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    lr = inner.learning_rate if hasattr(inner, "learning_rate") else inner.lr
    if callable(lr):
        return float(lr(inner.iterations))
    return float(tf.convert_to_tensor(lr))


def optimizer_variables(optimizer):
    """The optimizer's variables (iterations, slots, loss scale); tf_keras exposes them as a
    list or, on some optimizers, a method."""
    variables = optimizer.variables
    return list(variables() if callable(variables) else variables)


def build_variables(optimizer, variables):
    """Creates the optimizer's variables (iterations, hyperparameters, slots) for
    `variables` now, as its first update would (call it under the strategy's scope): a
    resume then matches and restores every one of them before the first step, instead of
    TF deferring the slots' values to the step that creates them."""
    if hasattr(optimizer, "_create_all_weights"):  # tf_keras' legacy OptimizerV2 family
        optimizer._create_all_weights(variables)
    elif hasattr(optimizer, "build"):  # tf_keras' and Keras 3's current optimizers
        optimizer.build(variables)
