"""Your own data: arrays `(x, y)`, a `tf.data.Dataset` of `(features, labels)`, or a dict
`{"train": ..., "eval": ...}` of either (`eval_data=` works too).

Give examples unbatched: batching to the per-replica size, sharding per input
pipeline and shuffling are mlbench's, exactly as for named data (`finish_train`),
so arrays and the same arrays as a dataset see the same batches. Features that
are floating point become float32 and integer labels int32 (the task compares
them with int32 predictions); everything is checked before a run builds anything.
"""
import dataclasses
from typing import Any, Callable, Optional

import numpy as np
import tensorflow as tf

from mlbench.data.base import DataSource, finish_eval, finish_train, shard
from mlbench.input_kind import kind_of
from mlbench.reprs import short

MAX_SHUFFLE_BUFFER = 100_000  # examples held for shuffling a large dataset of your own
MAX_LABEL_SCAN = 1_000_000  # datasets up to this size have their labels checked up front


def is_own(data):
    """True for the forms this module takes (not a name, not a DataSource)."""
    if isinstance(data, tf.data.Dataset):
        return True
    if isinstance(data, dict):
        return "train" in data
    return isinstance(data, (tuple, list)) and len(data) == 2 and not isinstance(data[0], str)


@dataclasses.dataclass
class OwnSource(DataSource):
    """A user's examples: `make_train()` / `make_eval()` give unbatched datasets.

    Attributes (besides DataSource's):
      label_range: (min, max) of integer labels when known, else None.
      integer_labels: whether labels are class indices (else regression targets).
      shuffle_buffer: examples in the shuffle buffer (the whole set when it fits).
    """
    make_train: Optional[Callable[[], Any]] = None
    make_eval: Optional[Callable[[], Any]] = None
    label_range: Optional[tuple] = None
    integer_labels: bool = True
    shuffle_buffer: int = 10000
    train_element_spec: Any = None

    @property
    def has_eval(self):
        return self.make_eval is not None

    def train_dataset(self, input_context, per_replica_batch, seed, skip_batches=0):
        return finish_train(shard(self.make_train(), input_context), per_replica_batch, seed,
                            skip_batches, self.shuffle_buffer)

    def eval_dataset(self, input_context, per_replica_batch):
        return finish_eval(shard(self.make_eval(), input_context), per_replica_batch)


def source(data, eval_data=None, name="your data"):
    """An OwnSource from `data` (and `eval_data`); ValueError naming what is wrong."""
    if isinstance(data, dict):
        extra = sorted(set(data) - {"train", "eval"})
        if extra or "train" not in data:
            raise ValueError(f"`data` (a dict with keys {sorted(data)}) must have 'train' "
                             "and optionally 'eval'.")
        if eval_data is not None and data.get("eval") is not None:
            raise ValueError("Give the eval set once: `data['eval']` or `eval_data`, not both.")
        data, eval_data = data["train"], data.get("eval", eval_data)
    train, n_train, labels = _split("data", data)
    spec = train().element_spec
    if eval_data is not None:
        make_eval, n_eval, eval_labels = _split("eval_data", eval_data)
        _check_same_structure(spec, make_eval().element_spec)
        if n_eval is None:
            raise ValueError(f"`eval_data` ({short(eval_data)}) has an infinite or unknown "
                             "number of examples; an eval pass must end: give a finite set.")
        labels = _union(labels, eval_labels)
    else:
        make_eval, n_eval = None, None
    features, label_spec = spec
    integer = label_spec.dtype.is_integer or label_spec.dtype.is_bool
    return OwnSource(
        name=name, kind=kind_of(_shape(features)), input_shape=_shape(features),
        num_classes=(labels[1] + 1) if integer and labels else 0,
        num_train_examples=n_train, num_eval_examples=n_eval, make_train=train,
        make_eval=make_eval, label_range=labels if integer else None, integer_labels=integer,
        shuffle_buffer=min(n_train or 10000, MAX_SHUFFLE_BUFFER), train_element_spec=spec)


def _split(argument, value):
    """(make_dataset, size or None, integer label range or None) of arrays or a dataset."""
    if isinstance(value, tf.data.Dataset):
        return _from_dataset(argument, value)
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return _from_arrays(argument, value)
    raise ValueError(f"`{argument}` ({short(value)}) must be a pair of arrays (x, y), a "
                     "tf.data.Dataset of (features, labels), or a dict "
                     "{'train': ..., 'eval': ...} of either.")


def _from_arrays(argument, pair):
    x, y = (tf.nest.map_structure(np.asarray, part) for part in pair)
    lengths = {len(a) for a in tf.nest.flatten(x)}
    if len(lengths) != 1 or lengths != {len(y)}:
        raise ValueError(f"`{argument}`: x ({short(x)}) and y ({short(y)}) must hold the same "
                         f"number of examples; they hold {sorted(lengths)} and {len(y)}.")
    if not len(y):
        raise ValueError(f"`{argument}` ({short(pair)}) holds no examples.")
    x = tf.nest.map_structure(_float32, x)
    y = y.astype(np.int32) if y.dtype.kind in "iub" else y.astype(np.float32)
    labels = (int(y.min()), int(y.max())) if y.dtype.kind == "i" else None
    # The dataset is made inside the input function (parameter servers build it
    # on each worker), from arrays held here.
    return (lambda: tf.data.Dataset.from_tensor_slices((x, y))), len(y), labels


def _float32(array):
    return array.astype(np.float32) if array.dtype.kind == "f" else array


def _from_dataset(argument, dataset):
    spec = dataset.element_spec
    if not (isinstance(spec, tuple) and len(spec) == 2):
        raise ValueError(f"`{argument}` (a tf.data.Dataset with element_spec "
                         f"{short(spec)}) must yield (features, labels) pairs.")
    dataset = dataset.map(_cast_element)
    size = int(dataset.cardinality())
    size = None if size < 0 else size  # tf.data.INFINITE_CARDINALITY / UNKNOWN_CARDINALITY
    labels = _scan_labels(dataset) if size and size <= MAX_LABEL_SCAN else None
    return (lambda: dataset), size, labels


def _cast_element(features, labels):
    features = tf.nest.map_structure(
        lambda t: tf.cast(t, tf.float32) if t.dtype.is_floating else t, features)
    is_integer = labels.dtype.is_integer or labels.dtype.is_bool
    return features, tf.cast(labels, tf.int32 if is_integer else tf.float32)


def _scan_labels(dataset):
    """(min, max) of integer labels, read once (datasets of at most MAX_LABEL_SCAN)."""
    if not dataset.element_spec[1].dtype.is_integer:
        return None
    big = tf.int32.max
    low, high = dataset.map(lambda x, y: (tf.reduce_min(y), tf.reduce_max(y))).reduce(
        (tf.constant(big), tf.constant(-big)),
        lambda acc, y: (tf.minimum(acc[0], y[0]), tf.maximum(acc[1], y[1])))
    return int(low), int(high)


def _union(a, b):
    return (min(a[0], b[0]), max(a[1], b[1])) if a and b else a or b


def _check_same_structure(train_spec, eval_spec):
    def shapes(spec):
        return tf.nest.map_structure(lambda s: (tuple(s.shape), s.dtype.name), spec)
    if shapes(train_spec) != shapes(eval_spec):
        raise ValueError(f"`eval_data` yields {short(eval_spec)}, unlike `data` "
                         f"({short(train_spec)}); expected the same shapes and dtypes.")


def _shape(features):
    if not isinstance(features, tf.TensorSpec) or not features.shape.is_fully_defined():
        return None
    return tuple(features.shape)


