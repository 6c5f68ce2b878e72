"""Your own model: a zero-argument function building a tf_keras.Model, or a built one.

`describe(model)` turns what the user passed into a ModelInfo without keeping a
model: a function is called once inside a throw-away graph (no eager variables,
no memory kept; ResNet-50 takes ~5 s), so its input shape, and output width
are known before the run builds anything for real — under
the strategy's scope and the precision policy (`mlbench.parts.build`).
"""
from typing import Any, Optional, Tuple

import tensorflow as tf
import tf_keras as keras

from mlbench.models.registry import ModelInfo
from mlbench.reprs import short

SOURCE = "your own model"


def is_own(model):
    """True for what `describe` takes: a function or a tf_keras.Model (not a name)."""
    return not isinstance(model, str) and (callable(model) or is_keras_3(model))


def is_keras_3(model):
    module = type(model).__module__
    return module.startswith("keras") and not module.startswith("tf_keras")


def check_tf_keras(value, what):
    """A Keras 3 model (or anything else) where a tf_keras.Model is expected is named."""
    if isinstance(value, keras.Model):
        return value
    if is_keras_3(value):
        raise ValueError(f"{what} ({short(value)}) is a Keras 3 model (`import keras`); "
                         "mlbench trains tf_keras models: build it with "
                         "`import tf_keras as keras`.")
    raise ValueError(f"{what} ({short(value)}) is not a tf_keras.Model; expected a function "
                     "returning one, a tf_keras.Model, or a name from "
                     "mlbench.models.list_models().")


def describe(model, name=None):
    """The ModelInfo of a user's function or model instance (see the module docstring)."""
    if isinstance(model, keras.Model) or is_keras_3(model):
        check_tf_keras(model, "`model`")
        return _info(name or model.name, lambda **_: model, model, instance=True)
    with tf.Graph().as_default():
        try:
            built = model()
        except TypeError as e:
            raise ValueError(f"`model` ({short(model)}) must be callable with no arguments "
                             f"and return a tf_keras.Model: {e}") from e
        check_tf_keras(built, f"`model` ({short(model)}) returned a value that")
        return _info(name or getattr(model, "__name__", built.name),
                     lambda **_: model(), built, instance=False)


def _info(name, factory, built, instance):
    return ModelInfo(name=name, factory=factory, input_shape=input_shape_of(built),
                     kind=kind_of(input_shape_of(built)), source=SOURCE, own=True,
                     instance=built if instance else None,
                     output_width=output_width_of(built), policy=built.dtype_policy.name)


def input_shape_of(model) -> Optional[Tuple[int, ...]]:
    """Per-example input shape of a single-input model; None when it has no fixed one
    (several inputs, or a subclassed model not built yet: the data says then)."""
    try:
        shape = model.input_shape
    except (AttributeError, ValueError):
        return None
    if not isinstance(shape, tuple) or any(d is None for d in shape[1:]):
        return None
    return tuple(shape[1:])


def output_width_of(model) -> Optional[int]:
    try:
        shape = model.output_shape
    except (AttributeError, ValueError):
        return None
    return shape[-1] if isinstance(shape, tuple) and len(shape) >= 2 else None


def ends_in_probabilities(model):
    """Whether the outputs are probabilities (a softmax or sigmoid last), not logits: the
    loss and AUC then read them as Keras' `from_logits=False` would."""
    if not getattr(model, "layers", None):
        return False
    last = model.layers[-1]
    return (isinstance(last, keras.layers.Softmax) or getattr(last, "activation", None) in
            (keras.activations.softmax, keras.activations.sigmoid))


def kind_of(input_shape: Any):
    """'image' for (H, W, C) inputs (adapted like the zoo's), else 'vector'."""
    return "image" if input_shape is not None and len(input_shape) == 3 else "vector"
