"""Model registry: names → factories, input specs and forward FLOPs."""
import dataclasses
from typing import Callable, Optional, Tuple

import gin


@dataclasses.dataclass(frozen=True)
class ModelInfo:
    """What mlbench knows about a model name.

    Attributes:
      name: registry name.
      factory: callable(num_classes, **overrides) -> tf_keras.Model.
      input_shape: per-example input shape (images) or (seq_len,) for BERT.
      kind: 'image' (inputs are images, outputs logits) or 'bert' (pretraining dict).
      source: the library the architecture comes from.
      gflops: forward GFLOPs per example (multiply-add = 2 FLOPs) or None.
      gflops_source: where the figure comes from.
    """
    name: str
    factory: Callable
    input_shape: Tuple[int, ...]
    kind: str
    source: str
    gflops: Optional[float] = None
    gflops_source: str = ""


_REGISTRY = {}


def register(info):
    _REGISTRY[info.name] = info
    return info


def list_models():
    """Names of every registered model, sorted."""
    return sorted(_REGISTRY)


def info(name):
    """The ModelInfo of `name`; a ValueError listing the known names otherwise."""
    if name not in _REGISTRY:
        raise ValueError(f"`model` ({name!r}) is not a known model; known: {list_models()}.")
    return _REGISTRY[name]


@gin.configurable("mlbench.models.get", denylist=["name"])
def get(name, num_classes=1000, **overrides):
    """Builds model `name` (a tf_keras.Model) under the current tf_keras policy.

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
