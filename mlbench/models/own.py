"""Your own model: a zero-argument function building a Keras model, or a built one.

Either Keras generation: tf_keras (`import tf_keras`) or Keras 3 with the TensorFlow
backend (`import keras`, or `tf.keras` since TF 2.16); `mlbench.models.keras3` tells them apart.

`describe(model)` turns what the user passed into a ModelInfo without keeping a
model: a function is called once inside a throw-away graph (no eager variables,
no memory kept; ResNet-50 takes ~5 s), so its input shape, and output width
are known before the run builds anything for real — under
the strategy's scope and the precision policy (`mlbench.plan.parts.build`).
"""
import dataclasses
from typing import Optional, Tuple

import tensorflow as tf
import tf_keras as keras

from mlbench.models import keras3
from mlbench.models.compiled import compile_args
from mlbench.models.input_kind import kind_of
from mlbench.models.registry import ModelInfo
from mlbench.reprs import short

SOURCE = "your own model"


def is_own(model):
    """True for what `describe` takes: a function or a Keras model (not a name)."""
    return not isinstance(model, str) and (callable(model) or is_keras_model(model))


def is_keras_model(value):
    return isinstance(value, keras.Model) or keras3.is_model(value)


def check_model(value, what):
    """`value` is a model mlbench can train (tf_keras, or Keras 3 on TensorFlow)."""
    if isinstance(value, keras.Model):
        return _without_own_step(value, keras.Model, what)
    if keras3.is_model(value):
        keras3.check_backend(what)
        return _without_own_step(value, keras3.loaded().Model, what)
    raise ValueError(f"{what} ({short(value)}) is not a Keras model; expected a function "
                     "returning one (tf_keras or Keras 3), a built keras.Model, or a name "
                     "from mlbench.models.list_models().")


# `fit`'s per-step hooks a model may override; mlbench's step does their work itself
CUSTOM_STEPS = ("train_step", "test_step", "compute_loss")


def _without_own_step(model, base, what):
    """Refuses a model whose class overrides `fit`'s step: mlbench's step would not run the
    override (it computes the loss and applies the gradients itself, which is what makes
    accumulation, loss scaling and distribution exact)."""
    overridden = [name for name in CUSTOM_STEPS
                  if getattr(type(model), name, None) is not getattr(base, name, None)]
    if overridden:
        raise ValueError(f"{what} ({type(model).__name__}) overrides {overridden}: mlbench "
                         "trains with its own step, which would not run that code. Move "
                         "its maths into `call` (and `add_loss`), or keep `model.fit` for "
                         "this model.")
    return model


def describe(model, name=None):
    """The ModelInfo of a user's function or model instance (see the module docstring)."""
    if is_keras_model(model):
        check_model(model, "`model`")
        return _info(name or model.name, lambda **_: model, model, instance=True,
                     compiled=compile_args(model))
    with tf.Graph().as_default():
        try:
            built = model()
        except TypeError as e:
            raise ValueError(f"`model` ({short(model)}) must be callable with no arguments "
                             f"and return a Keras model: {e}") from e
        check_model(built, f"`model` ({short(model)}) returned a value that")
        info = _info(name or getattr(model, "__name__", built.name),
                     lambda **_: model(), built, instance=False, compiled=None)
        eager = keras3.is_model(built) and getattr(built, "compiled", False)
        if not eager:
            return dataclasses.replace(info, compiled=compile_args(built))
    # Keras 3 reads its optimizer's learning-rate variable in `get_config`, which a graph
    # cannot: compile()'s arguments come from one eager call of the function
    return dataclasses.replace(info, compiled=compile_args(model()))


def _info(name, factory, built, instance, compiled):
    return ModelInfo(name=name, factory=factory, input_shape=input_shape_of(built),
                     kind=kind_of(input_shape_of(built)), source=SOURCE, own=True,
                     instance=built if instance else None,
                     output_width=output_width_of(built), policy=built.dtype_policy.name,
                     keras=keras3.generation(built), compiled=compiled,
                     output_names=_output_names(built))


def _output_names(model):
    """The outputs' names of a model with several (None for one, or when not built)."""
    try:
        names = tuple(model.output_names or ())
    except (AttributeError, ValueError):
        return None
    return names if len(names) > 1 else None


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


def example_batch(input_shape, feature_spec):
    """One example of zeros shaped as the model's input (`input_shape` for a single
    tensor, else the data's per-example `feature_spec`; unknown sizes become 1), with a
    batch dimension of 1."""
    def zeros(spec, shape=None):
        dims = [d if d is not None else 1 for d in (shape or spec.shape)]
        return tf.zeros([1] + dims, spec.dtype)
    if isinstance(feature_spec, tf.TensorSpec) and input_shape is not None:
        return zeros(feature_spec, tuple(input_shape))
    return tf.nest.map_structure(zeros, feature_spec)


def ensure_built(model, batch):
    """Builds a model that has no weights yet (a subclassed model, as users write them)
    by calling it on `batch`, as `fit` builds it on the first batch; the optimizer can
    then be built for its variables."""
    if not model.built or not model.weights:
        model(batch, training=False)


def output_spec(model, batch):
    """The batched TensorSpec of the model's output (a structure of them for several)."""
    try:
        shape = model.output_shape
    except (AttributeError, ValueError):
        shape = None
    if isinstance(shape, tuple) and all(isinstance(d, (int, type(None))) for d in shape):
        return tf.TensorSpec(shape, tf.float32)
    outputs = model(batch, training=False)
    return tf.nest.map_structure(
        lambda t: tf.TensorSpec((None,) + tuple(t.shape[1:]), tf.float32), outputs)


def output_probabilities(model, names):
    """Per output name, whether its layer ends in a softmax or sigmoid (see
    `ends_in_probabilities`)."""
    found = []
    for name in names:
        try:
            layer = model.get_layer(name)
        except ValueError:
            found.append(False)
            continue
        activation = getattr(getattr(layer, "activation", None), "__name__", None)
        found.append(type(layer).__name__ == "Softmax" or activation in ("softmax",
                                                                           "sigmoid"))
    return found


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
    # by name: the same test holds for tf_keras and Keras 3 layers and activations
    activation = getattr(getattr(last, "activation", None), "__name__", None)
    return type(last).__name__ == "Softmax" or activation in ("softmax", "sigmoid")


