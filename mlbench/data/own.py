"""Your own data: arrays `(x, y)` or `(x, y, sample_weight)`, a `tf.data.Dataset` of
`(features, labels)` or `(features, labels, sample_weights)`, or a dict
`{"train": ..., "eval": ...}` of either (`eval_data=` works too). Features may be one
array or several (a tuple, list or dict, for a model with several inputs).

Batching to the per-replica size and sharding per input pipeline are mlbench's, as for
named data (`finish_train`). Arrays are shuffled by mlbench (as `fit` shuffles them); a
dataset keeps the order its pipeline gives (as `fit` keeps it) and is read lazily: it
is checked by its element spec and its first examples, never by a pass over it. A
dataset that yields batches (`batched=True`, as `mlbench.fit` takes one) is unbatched
and batched again to the per-replica size, in order. Floating-point features become
float32 and integer labels int32 (the task compares them with int32 predictions).
"""
import dataclasses
from typing import Any, Callable, Optional

import numpy as np
import tensorflow as tf

from mlbench.data.base import DataSource, finish_eval, finish_train, shard
from mlbench.models.input_kind import kind_of
from mlbench.reprs import short

MAX_SHUFFLE_BUFFER = 100_000  # examples held for shuffling arrays of your own
FIRST_EXAMPLES = 64  # a dataset's labels are checked on its first examples only
OPTIONS = ("batched", "class_weight", "shuffle")  # `data_options` your own data takes


def is_own(data):
    """True for the forms this module takes (not a name, not a DataSource)."""
    if isinstance(data, tf.data.Dataset):
        return True
    if isinstance(data, dict):
        return "train" in data
    return isinstance(data, (tuple, list)) and len(data) in (2, 3) and \
        not isinstance(data[0], str)


@dataclasses.dataclass
class OwnSource(DataSource):
    """A user's examples: `make_train()` / `make_eval()` give unbatched datasets.

    Attributes (besides DataSource's):
      label_range: (min, max) of integer labels when known, else None.
      integer_labels: whether labels are class indices (else regression targets).
      shuffle_buffer: examples in the shuffle buffer (the whole set when it fits; 0 for a
        dataset, whose order is the user's).
      batch_size: the batch a dataset of batches yields (`batched=True`), else None.
    """
    make_train: Optional[Callable[[], Any]] = None
    make_eval: Optional[Callable[[], Any]] = None
    label_range: Optional[tuple] = None
    integer_labels: bool = True
    shuffle_buffer: int = 10000
    train_element_spec: Any = None
    batch_size: Optional[int] = None

    @property
    def has_eval(self):
        return self.make_eval is not None

    def train_dataset(self, input_context, per_replica_batch, seed, skip_batches=0):
        return finish_train(shard(self.make_train(), input_context), per_replica_batch, seed,
                            skip_batches, self.shuffle_buffer)

    def eval_dataset(self, input_context, per_replica_batch):
        return finish_eval(shard(self.make_eval(), input_context), per_replica_batch)


def source(data, eval_data=None, name="your data", batched=False, class_weight=None,
           shuffle=True, **unknown):
    """An OwnSource from `data` (and `eval_data`); ValueError naming what is wrong.

    batched: the datasets yield batches (as `fit` takes them); their batch size is read
      from the first one and recorded (`OwnSource.batch_size`).
    class_weight: {class: weight}, multiplied into each training example's sample weight
      (the argmax of a one-hot label is its class), as `fit`'s `class_weight`.
    shuffle: False keeps arrays in their order (`fit`'s shuffle=False); a dataset is
      never shuffled by mlbench.
    """
    if unknown:
        raise ValueError(f"`data_options` ({unknown!r}) has no meaning for data of your "
                         f"own; it takes {list(OPTIONS)}.")
    if isinstance(data, dict):
        extra = sorted(set(data) - {"train", "eval"})
        if extra or "train" not in data:
            raise ValueError(f"`data` (a dict with keys {sorted(data)}) must have 'train' "
                             "and optionally 'eval'.")
        if eval_data is not None and data.get("eval") is not None:
            raise ValueError("Give the eval set once: `data['eval']` or `eval_data`, not both.")
        data, eval_data = data["train"], data.get("eval", eval_data)
    train, n_train, labels, batch = _split("data", data, batched)
    if class_weight is not None:
        train = _with_class_weight(train, class_weight)
    spec = train().element_spec
    if eval_data is not None:
        make_eval, n_eval, eval_labels, _ = _split("eval_data", eval_data, batched)
        _check_same_structure(spec, make_eval().element_spec)
        if n_eval is None and not (batched and _finite(eval_data)):
            raise ValueError(f"`eval_data` ({short(eval_data)}) has an infinite or unknown "
                             "number of examples; an eval pass must end: give a finite set.")
        labels = _union(labels, eval_labels)
    else:
        make_eval, n_eval = None, None
    features, label_spec = spec[0], spec[1]
    integer = isinstance(label_spec, tf.TensorSpec) and (label_spec.dtype.is_integer or
                                                        label_spec.dtype.is_bool)
    shuffled = shuffle and not isinstance(data, tf.data.Dataset)
    return OwnSource(
        name=name, kind=kind_of(_shape(features)), input_shape=_shape(features),
        num_classes=(labels[1] + 1) if integer and labels else 0,
        num_train_examples=n_train, num_eval_examples=n_eval, make_train=train,
        make_eval=make_eval, label_range=labels if integer else None, integer_labels=integer,
        shuffle_buffer=min(n_train or 10000, MAX_SHUFFLE_BUFFER) if shuffled else 0,
        train_element_spec=spec, batch_size=batch)


def _split(argument, value, batched=False):
    """(make_dataset, size or None, integer label range or None, batch size or None) of
    arrays or a dataset."""
    if isinstance(value, tf.data.Dataset):
        return _from_dataset(argument, value, batched)
    if isinstance(value, (tuple, list)) and len(value) in (2, 3):
        return _from_arrays(argument, value) + (None,)
    raise ValueError(f"`{argument}` ({short(value)}) must be arrays (x, y) or (x, y, "
                     "sample_weight), a tf.data.Dataset of (features, labels[, "
                     "sample_weights]), or a dict {'train': ..., 'eval': ...} of either.")


def _from_arrays(argument, arrays):
    x, y = (tf.nest.map_structure(np.asarray, part) for part in arrays[:2])
    weights = [np.asarray(arrays[2], np.float32)] if len(arrays) == 3 else []
    lengths = {len(a) for a in tf.nest.flatten(x)}
    n = {len(a) for a in tf.nest.flatten(y)}
    if len(lengths) != 1 or lengths != n or any({len(w)} != n for w in weights):
        raise ValueError(f"`{argument}`: x ({short(x)}), y ({short(y)})"
                         f"{' and sample_weight' if weights else ''} must hold the same "
                         f"number of examples; they hold {sorted(lengths)} and "
                         f"{sorted(n) if len(n) > 1 else min(n)}"
                         f"{' and ' + str(len(weights[0])) if weights else ''}.")
    if not min(n):
        raise ValueError(f"`{argument}` ({short(arrays)}) holds no examples.")
    # several inputs or outputs: tf.data takes a list as a tuple
    x, y = (tuple(v) if isinstance(v, list) else v
            for v in (tf.nest.map_structure(_float32, x), tf.nest.map_structure(_label, y)))
    labels = (int(y.min()), int(y.max())) if isinstance(y, np.ndarray) and \
        y.dtype.kind == "i" else None
    # The dataset is made inside the input function (parameter servers build it
    # on each worker), from arrays held here.
    return (lambda: tf.data.Dataset.from_tensor_slices((x, y, *weights))), len(y), labels


def _label(array):
    return array.astype(np.int32) if array.dtype.kind in "iub" else array.astype(np.float32)


def _float32(array):
    return array.astype(np.float32) if array.dtype.kind == "f" else array


def _from_dataset(argument, dataset, batched):
    spec = dataset.element_spec
    if not (isinstance(spec, tuple) and len(spec) in (2, 3)):
        raise ValueError(f"`{argument}` (a tf.data.Dataset with element_spec "
                         f"{short(spec)}) must yield (features, labels) or (features, "
                         "labels, sample_weights) tuples.")
    batch = first_batch_size(argument, dataset) if batched else None
    dataset = dataset.unbatch() if batched else dataset
    dataset = dataset.map(_cast_element)
    size = int(dataset.cardinality())
    size = None if size < 0 else size  # tf.data.INFINITE_CARDINALITY / UNKNOWN_CARDINALITY
    return (lambda: dataset), size, _first_labels(dataset), batch


def first_batch_size(argument, dataset):
    """The batch size of a dataset of batches, read from its first batch."""
    first = next(iter(dataset.take(1)), None)
    if first is None:
        raise ValueError(f"`{argument}` (a tf.data.Dataset) yields no batch.")
    return int(tf.shape(tf.nest.flatten(first)[0])[0])


def _cast_element(features, labels, *weights):
    features = tf.nest.map_structure(
        lambda t: tf.cast(t, tf.float32) if t.dtype.is_floating else t, features)
    labels = tf.nest.map_structure(
        lambda t: tf.cast(t, tf.int32 if t.dtype.is_integer or t.dtype.is_bool
                          else tf.float32), labels)
    return (features, labels, *(tf.cast(w, tf.float32) for w in weights))


def _first_labels(dataset):
    """(min, max) of the integer labels of the first FIRST_EXAMPLES examples: a check, not a
    pass over a pipeline that may be costly (the step checks every label it reads)."""
    label = dataset.element_spec[1]
    if not isinstance(label, tf.TensorSpec) or not label.dtype.is_integer:
        return None  # several outputs' labels, or regression targets: nothing to check
    labels = [np.asarray(element[1]) for element in dataset.take(FIRST_EXAMPLES)]
    if not labels:
        return None
    return int(min(v.min() for v in labels)), int(max(v.max() for v in labels))


def _with_class_weight(make_dataset, class_weight):
    """Each example's sample weight times its class's weight (`fit`'s class_weight: keys
    0..n-1; the class of a one-hot label is its argmax, of a single 0/1 its rounding)."""
    keys = sorted(class_weight) if isinstance(class_weight, dict) else None
    if not keys or keys != list(range(len(keys))):
        raise ValueError(f"`class_weight` ({class_weight!r}) must be a dict with keys "
                         "0..n-1 (every class), e.g. {0: 1.0, 1: 5.0}, as Keras takes it.")
    table = tf.constant([float(class_weight[k]) for k in keys], tf.float32)

    def weigh(features, labels, *weights):
        weight = tf.gather(table, _class_of(labels))
        return features, labels, weight * (weights[0] if weights else 1.0)
    return lambda: make_dataset().map(weigh)


def _class_of(label):
    if label.shape.rank == 0:
        return tf.cast(label, tf.int32)
    if label.shape[-1] == 1:
        return tf.cast(tf.round(tf.reshape(label, [])), tf.int32)
    return tf.argmax(label, -1, output_type=tf.int32)


def _finite(dataset):
    """A dataset of batches whose number of batches is known (its examples are not)."""
    return isinstance(dataset, tf.data.Dataset) and int(dataset.cardinality()) >= 0


def _union(a, b):
    return (min(a[0], b[0]), max(a[1], b[1])) if a and b else a or b


def _check_same_structure(train_spec, eval_spec):
    def shapes(spec):
        return tf.nest.map_structure(lambda s: (tuple(s.shape), s.dtype.name), spec)
    if shapes(train_spec[:2]) != shapes(eval_spec[:2]):  # sample weights may differ
        raise ValueError(f"`eval_data` yields {short(eval_spec)}, unlike `data` "
                         f"({short(train_spec)}); expected the same shapes and dtypes.")


def _shape(features):
    if not isinstance(features, tf.TensorSpec) or not features.shape.is_fully_defined():
        return None
    return tuple(features.shape)


