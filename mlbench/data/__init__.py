"""Data sources by name: bundled real data, synthetic, ImageNet/BERT TFRecords, tfds.

`get(name, ...)` returns a DataSource; `data=` in `mlbench.train` also accepts
a DataSource instance for users' own data.
"""
from mlbench.data import bundled, synthetic
from mlbench.data.base import DataSource

_BUNDLED = {"mnist": bundled.mnist, "digits": bundled.digits}
NAMES = ("mnist", "digits", "synthetic", "imagenet", "bert_pretraining", "tfds:<name>")


def check_name(name):
    """Raises a ValueError naming `name` unless it is a known dataset name or a DataSource."""
    if isinstance(name, DataSource) or name in _BUNDLED or name in (
            "synthetic", "imagenet", "bert_pretraining"):
        return
    if isinstance(name, str) and name.startswith("tfds:") and len(name) > len("tfds:"):
        return
    raise ValueError(f"`data` ({name!r}) is not a known dataset; known: {list(NAMES)}.")


def get(name, data_dir=None, model_info=None, num_classes=None, **kwargs):
    """A DataSource by name.

    Args:
      name: one of NAMES (or a DataSource, returned as is).
      data_dir: directory of TFRecords (imagenet, bert_pretraining) or the tfds data_dir.
      model_info: the model's registry entry (shapes synthetic data and image sizes).
      num_classes: label count for synthetic/imagenet data (default 1000).
      **kwargs: source-specific options.
    """
    check_name(name)
    if isinstance(name, DataSource):
        return name
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


__all__ = ["get", "check_name", "DataSource", "NAMES"]
