"""Optimizers and LR schedules: a thin layer over Model Garden's OptimizerFactory.

Model Garden already has SGD, LARS, LAMB, AdamW and the warm-up + poly/cosine
schedules MLPerf uses; mlbench only flattens their nested config into gin-
friendly arguments and returns the hyperparameters it resolved (for logs).
"""
import tensorflow as tf
from official.modeling.optimization import optimizer_factory
from official.modeling.optimization.configs import optimization_config

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


def hyperparameters(name="sgd", learning_rate=0.1, schedule="constant", decay_steps=None,
                    end_learning_rate=1e-4, power=1.0, warmup_steps=0, momentum=0.9,
                    weight_decay=0.0, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
                    exclude_from_weight_decay=("batch_normalization", "bias", "LayerNorm",
                                               "layer_norm")):
    """Checks and resolves flat optimizer arguments into the hyperparameters dict.

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
    return dict(name=name, learning_rate=learning_rate, schedule=schedule,
                decay_steps=decay_steps, end_learning_rate=end_learning_rate,
                power=power, warmup_steps=warmup_steps, momentum=momentum,
                weight_decay=weight_decay, beta_1=beta_1, beta_2=beta_2,
                epsilon=epsilon, exclude_from_weight_decay=tuple(exclude_from_weight_decay))


def from_hyperparameters(h):
    """The tf_keras optimizer (Model Garden's factory) for a `hyperparameters()` dict."""
    exclude = list(h["exclude_from_weight_decay"]) if h["weight_decay"] else None
    config = {
        "optimizer": {"type": h["name"], h["name"]: _optimizer_params(
            h["name"], h["momentum"], h["weight_decay"], h["beta_1"], h["beta_2"],
            h["epsilon"], exclude)},
        "learning_rate": _schedule(h["schedule"], h["learning_rate"], h["decay_steps"],
                                   h["end_learning_rate"], h["power"]),
    }
    if h["warmup_steps"]:
        kind = "polynomial" if h["name"] == "lars" else "linear"
        config["warmup"] = {"type": kind, kind: {"warmup_steps": h["warmup_steps"]}}
    factory = optimizer_factory.OptimizerFactory(optimization_config.OptimizationConfig(config))
    return factory.build_optimizer(factory.build_learning_rate())


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
