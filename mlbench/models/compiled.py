"""What a user's `compile()` set: loss(es), loss_weights, metrics and the optimizer.

A compiled Keras model trains in mlbench with what its compile() said, as `fit` would
(an argument given to mlbench wins, `plan.train`). Each generation keeps compile's own
arguments as the user wrote them — tf_keras in `_get_compile_args()`, Keras 3 in
`_compile_config` — and those are read here rather than the compiled containers, so
that names ('accuracy', 'mse') resolve in mlbench exactly as from the user's call
(`mlbench.training.keras_names`).

The optimizer is kept as its class and config (`OptimizerSpec`), not as the object:
the run makes a fresh one under its strategy's scope, with the same class,
hyperparameters and learning rate or LearningRateSchedule.
"""
import dataclasses
from typing import Any, Dict, Optional

from mlbench.models import keras3

# Keras' default learning rate per optimizer name (both generations agree), for a model
# of your own given an optimizer by name and no learning rate. Model Garden's LARS has
# no Keras counterpart: it keeps mlbench's recipe rate.
KERAS_DEFAULT_LEARNING_RATE = {"sgd": 0.01, "adam": 0.001, "adamw": 0.001, "lamb": 0.001}


@dataclasses.dataclass(frozen=True)
class KerasOptimizerHparams:
    """A Keras optimizer object's update rule as results and logs record it: its class,
    its learning rate at step 0 and its other plain settings (`settings`). Beside
    mlbench's named `OptimizerHparams`, it has the same `name` and `learning_rate`."""
    name: str
    learning_rate: float
    keras_class: str
    settings: Dict[str, Any]

    def recorded(self):
        return dict(self.settings, name=self.name, keras_class=self.keras_class,
                    learning_rate=self.learning_rate)


@dataclasses.dataclass(frozen=True)
class OptimizerSpec:
    """A Keras optimizer as class + config; `build()` makes a fresh one (call it under
    the strategy's scope). keras: 'tf_keras' or 'keras3', the optimizer's generation."""
    cls: Any
    config: Dict[str, Any]
    keras: str

    @property
    def name(self):
        return self.cls.__name__.lower()

    def build(self):
        return self.cls.from_config(dict(self.config))

    def with_learning_rate(self, learning_rate):
        return dataclasses.replace(self, config={**self.config,
                                                 "learning_rate": learning_rate})

    def hyperparameters(self):
        """The update rule as results and logs record it (KerasOptimizerHparams)."""
        plain = {k: v for k, v in self.config.items()
                 if (isinstance(v, (int, float, str, bool)) or v is None)
                 and k not in ("name", "learning_rate")}
        lr = self.config.get("learning_rate")
        return KerasOptimizerHparams(self.name, _initial_rate(self, lr),
                                     f"{self.cls.__module__}.{self.cls.__name__}", plain)


def _initial_rate(spec, lr):
    """The learning rate at step 0 (a schedule's first value), as a float."""
    if isinstance(lr, (int, float)):
        return float(lr)
    if isinstance(lr, dict):  # a serialized LearningRateSchedule
        lr = _schedules(spec.keras).deserialize(lr)
    value = lr(0) if callable(lr) else lr
    return float(getattr(value, "numpy", lambda: value)())


def _schedules(generation):
    if generation == keras3.KERAS_3:
        return keras3.loaded().optimizers.schedules
    import tf_keras
    return tf_keras.optimizers.schedules


def optimizer_spec(optimizer) -> Optional[OptimizerSpec]:
    """The spec of a Keras optimizer object of either generation, else None (a name)."""
    import tf_keras
    inner = getattr(optimizer, "inner_optimizer", None)  # a LossScaleOptimizer
    optimizer = inner if inner is not None else optimizer
    if keras3.is_optimizer(optimizer):
        return OptimizerSpec(type(optimizer), optimizer.get_config(), keras3.KERAS_3)
    if isinstance(optimizer, (tf_keras.optimizers.Optimizer,
                              tf_keras.optimizers.legacy.Optimizer)):
        return OptimizerSpec(type(optimizer), optimizer.get_config(), keras3.TF_KERAS)
    return None


@dataclasses.dataclass(frozen=True)
class CompileArgs:
    """compile()'s arguments as given (None where compile() was not given one)."""
    loss: Any = None
    loss_weights: Any = None
    metrics: Any = None
    weighted_metrics: Any = None
    optimizer: Optional[OptimizerSpec] = None


def compile_args(model) -> Optional[CompileArgs]:
    """What `model.compile(...)` was given, or None for a model never compiled."""
    if keras3.is_model(model):
        if not getattr(model, "compiled", False):
            return None
        given = dict(model._compile_config.config)
        given["loss"] = getattr(model, "loss", given.get("loss"))  # as the user wrote it
    else:
        if not getattr(model, "_is_compiled", False):
            return None
        given = model._get_compile_args(user_metrics=True)
    return CompileArgs(loss=given.get("loss"), loss_weights=given.get("loss_weights"),
                       metrics=given.get("metrics"),
                       weighted_metrics=given.get("weighted_metrics"),
                       optimizer=optimizer_spec(given.get("optimizer")))
