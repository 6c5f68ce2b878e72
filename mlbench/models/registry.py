"""Model registry: names → factories, input specs and forward FLOPs."""
import dataclasses
import inspect
from typing import Any, Callable, Optional, Tuple

import gin

from mlbench.models.input_kind import kind_of


@dataclasses.dataclass(frozen=True)
class ModelInfo:
    """What mlbench knows about a model.

    Attributes:
      name: registry name (or, for your own model, its function's or model's name).
      factory: callable(num_classes, **overrides) -> a Keras model (tf_keras or Keras 3).
      input_shape: per-example input shape (images) or (seq_len,) for BERT; None when
        only the data can say (a model of your own with several inputs).
      kind: 'image' (inputs are images, outputs logits), 'vector' or 'bert' (pretraining dict).
      source: the library the architecture comes from.
      gflops: forward GFLOPs per example (multiply-add = 2 FLOPs) or None.
      gflops_source: where the figure comes from.
      own: a model of the user's (registered by them, a function or an instance): its
        loss and metrics follow Keras' vocabulary ('accuracy'), `mlbench.training.task`.
      instance: the built model itself when one was passed (used as is, one device).
      output_width: the model's last output dimension, when known.
      policy: the dtype policy an instance was built under.
      keras: the model's Keras generation, 'tf_keras' or 'keras3' (`mlbench.models.keras3`): its
        optimizer, dtype policy and loss scaling are that generation's.
      output_names: the names of a model of your own's outputs when it has several.
      compiled: what the model's compile() set (`mlbench.models.compiled.CompileArgs`),
        or None for a model never compiled.
    """
    name: str
    factory: Callable
    input_shape: Optional[Tuple[int, ...]]
    kind: str
    source: str
    gflops: Optional[float] = None
    gflops_source: str = ""
    own: bool = False
    instance: Any = None
    output_width: Optional[int] = None
    policy: Optional[str] = None
    keras: str = "tf_keras"
    compiled: Any = None
    output_names: Optional[Tuple[str, ...]] = None


_REGISTRY = {}


def register(name, factory=None, *, input_shape=None, kind=None, source="registered",
             gflops=None, replace=False):
    """Registers a model factory under `name`; usable as a decorator.

        @mlbench.models.register("small_cnn_v2", input_shape=(28, 28, 1))
        def small_cnn_v2(num_classes=10):
            ...

    Args:
      name: the name `train(model=...)`, gin (`train.model = 'name'`) and the CLI use
        (or a ModelInfo, as mlbench's own models are registered).
      factory: returns a Keras model; given `num_classes` (and `model_options`) when
        it takes them.
      input_shape: per-example input shape; None = read from the model when a run starts.
      kind: 'image' | 'vector' (default: 'image' for 3-D inputs, else 'vector').
      source: where the architecture comes from (shown in results).
      gflops: forward GFLOPs per example, if published (else counted on the graph).
      replace: replace an existing name (refused otherwise: built-in models stay).
    """
    if isinstance(name, ModelInfo):
        return _add(name, replace)
    if factory is None:
        return lambda f: register(name, f, input_shape=input_shape, kind=kind, source=source,
                                  gflops=gflops, replace=replace)
    _check_registration(name, factory, input_shape, kind)
    shape = tuple(input_shape) if input_shape is not None else None
    kind = kind or kind_of(shape)
    _add(ModelInfo(name, _accepting(factory), shape, kind, source, gflops,
                   "published" if gflops else "graph", own=True), replace)
    return factory


def _check_registration(name, factory, input_shape, kind):
    if not isinstance(name, str) or not name:
        raise ValueError(f"`name` ({name!r}) must be a non-empty string.")
    if not callable(factory):
        raise ValueError(f"`factory` ({factory!r}) must be callable (returning a "
                         "a Keras model).")
    if kind is not None and kind not in ("image", "vector"):
        raise ValueError(f"`kind` ({kind!r}) must be 'image' or 'vector'.")
    if input_shape is not None and not all(isinstance(d, int) and d > 0 for d in input_shape):
        raise ValueError(f"`input_shape` ({input_shape!r}) must be a tuple of positive ints.")


def _add(model_info, replace):
    if model_info.name in _REGISTRY and not replace:
        raise ValueError(f"`name` ({model_info.name!r}) is already a registered model "
                         f"({_REGISTRY[model_info.name].source}); pick another name, or "
                         "pass replace=True to replace it.")
    _REGISTRY[model_info.name] = model_info
    return model_info


def unregister(name):
    """Removes a model registered by the user (tests, notebooks re-running a cell)."""
    _REGISTRY.pop(name, None)


def _accepting(factory):
    """A factory called as factory(num_classes=..., **model_options): `num_classes` is
    dropped for a function that does not declare it (its width is its own)."""
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return factory
    if "num_classes" in parameters or any(p.kind == p.VAR_KEYWORD
                                          for p in parameters.values()):
        return factory

    def build(num_classes=None, **model_options):
        del num_classes
        return factory(**model_options)
    return build


def list_models():
    """Names of every registered model, sorted."""
    return sorted(_REGISTRY)


def info(name):
    """The ModelInfo of `name`; a ValueError listing the known names otherwise."""
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ValueError(f"`model` ({name!r}) is not a known model; known: {list_models()}; "
                         "or pass your own: a function returning a Keras model, or "
                         "a built Keras model.")
    return _REGISTRY[name]


@gin.configurable("mlbench.models.get", denylist=["name"])
def get(name, num_classes=1000, **overrides):
    """Builds model `name` (a Keras model) under the current global dtype policy.

    Args:
      name: a name from `list_models()`.
      num_classes: classifier width (ignored by BERT models, which predict the vocabulary).
      **overrides: factory-specific arguments (e.g. `image_size`, `vocab_size`).
    """
    model_info = info(name)
    if not isinstance(num_classes, int) or num_classes < 1:
        raise ValueError(f"`num_classes` ({num_classes!r}) must be an integer >= 1.")
    return model_info.factory(num_classes=num_classes, **overrides)


def flops(name):
    """Forward FLOPs per example of model `name` (multiply-add counted as 2)."""
    model_info = info(name)
    if model_info.gflops is None:
        raise ValueError(f"No FLOPs figure is recorded for model {name!r}.")
    return model_info.gflops * 1e9


def input_shape(name):
    return info(name).input_shape
