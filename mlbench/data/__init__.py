"""Data sources: named ones (bundled real data, synthetic, ImageNet/BERT TFRecords, tfds),
your own arrays or datasets (`mlbench.data.own`), and names you register.

`get(data, ...)` returns a DataSource; `data=` in `mlbench.train` and
`mlbench.benchmark` takes a name, a DataSource, `(x, y)` arrays, a
`tf.data.Dataset` of `(features, labels)` or `{"train": ..., "eval": ...}`.
"""
from mlbench.data import bundled, own, synthetic
from mlbench.data.base import DataSource
from mlbench.reprs import short

_BUNDLED = {"mnist": bundled.mnist, "digits": bundled.digits}
_BUILT_IN = ("mnist", "digits", "synthetic", "imagenet", "bert_pretraining")
_REGISTERED = {}


def names():
    """Every data name: built-in, 'tfds:<name>', and the ones registered."""
    return list(_BUILT_IN) + ["tfds:<name>"] + sorted(_REGISTERED)


NAMES = tuple(names())


def register(name, factory=None, *, replace=False):
    """Registers `factory(**data_options)` under `name`; usable as a decorator.

    The factory returns a DataSource, `(x, y)` arrays, a `tf.data.Dataset` of
    `(features, labels)`, or `{"train": ..., "eval": ...}`; `train(data=name)`, gin
    (`train.data = 'name'`) and `mlbench train --data=name --import=your_module` use it.
    """
    if factory is None:
        return lambda f: register(name, f, replace=replace)
    if not isinstance(name, str) or not name or name.startswith("tfds:"):
        raise ValueError(f"`name` ({name!r}) must be a non-empty string not starting 'tfds:'.")
    if not callable(factory):
        raise ValueError(f"`factory` ({short(factory)}) must be callable.")
    if (name in _BUILT_IN or name in _REGISTERED) and not replace:
        raise ValueError(f"`name` ({name!r}) is already a data name; pick another name, or "
                         "pass replace=True to replace it.")
    if name in _BUILT_IN:
        raise ValueError(f"`name` ({name!r}) is built into mlbench and cannot be replaced.")
    _REGISTERED[name] = factory
    return factory


def unregister(name):
    _REGISTERED.pop(name, None)


def check_name(data):
    """Raises a ValueError naming `data` unless it is a known name, a DataSource or data
    of your own."""
    if isinstance(data, DataSource) or own.is_own(data):
        return
    if isinstance(data, str) and (data in _BUILT_IN or data in _REGISTERED):
        return
    if isinstance(data, str) and data.startswith("tfds:") and len(data) > len("tfds:"):
        return
    raise ValueError(f"`data` ({short(data)}) is not a known dataset; known: {names()}; or "
                     "pass your own: (x, y) arrays, a tf.data.Dataset of (features, labels), "
                     "or {'train': ..., 'eval': ...}.")


def get(name, data_dir=None, model_info=None, num_classes=None, eval_data=None, **kwargs):
    """A DataSource.

    Args:
      name: a name from `names()`, a DataSource (returned as is) or data of your own.
      data_dir: directory of TFRecords (imagenet, bert_pretraining) or the tfds data_dir.
      model_info: the model's registry entry (shapes synthetic data and image sizes).
      num_classes: label count for synthetic/imagenet data (default 1000).
      eval_data: the eval set of your own data (arrays or a dataset).
      **kwargs: source-specific options (`data_options`).
    """
    check_name(name)
    if eval_data is not None and not (own.is_own(name) or name in _REGISTERED):
        raise ValueError(f"`eval_data` ({short(eval_data)}) goes with data of your own; "
                         f"`data` ({short(name)}) has its own eval set.")
    if isinstance(name, DataSource):
        return name
    if own.is_own(name):
        return own.source(name, eval_data, **kwargs)
    if name in _REGISTERED:
        value = _REGISTERED[name](**kwargs)
        return value if isinstance(value, DataSource) else own.source(value, eval_data, name)
    if name in _BUNDLED:
        return _BUNDLED[name](**kwargs)
    if name == "synthetic":
        if model_info is None:
            raise ValueError("`data` 'synthetic' needs the model to shape its inputs.")
        return synthetic.for_model(model_info, num_classes or 1000, **kwargs)
    if name == "imagenet":
        from mlbench.data import imagenet
        return imagenet.source(data_dir, model_info, num_classes or 1000, **kwargs)
    if name == "bert_pretraining":
        from mlbench.data import bert_pretraining
        return bert_pretraining.source(data_dir, model_info, **kwargs)
    from mlbench.data import tfds_source
    return tfds_source.source(name[len("tfds:"):], data_dir, model_info, **kwargs)


__all__ = ["get", "check_name", "register", "unregister", "names", "DataSource", "NAMES"]
