"""TensorSpecs of a run's data as JSON (run.json's `input_spec`) and back.

A run trained on arrays or a dataset of your own records its inputs' structure, shapes
and dtypes, so its model can be rebuilt (a subclassed model is built on them), loaded and
exported — with a serving signature of the data's own dtypes — without the data.
"""
import numpy as np
import tensorflow as tf


def encode(spec):
    """A nested (tuple, list, dict) TensorSpec structure as plain JSON values."""
    if isinstance(spec, tf.TensorSpec):
        return {"shape": [None if d is None else int(d) for d in spec.shape],
                "dtype": spec.dtype.name}
    if isinstance(spec, dict):
        return {"dict": {str(k): encode(v) for k, v in spec.items()}}
    return {"tuple": [encode(v) for v in spec]}


def decode(value):
    """The structure `encode` wrote, as TensorSpecs (per example, no batch dimension)."""
    if "dict" in value:
        return {k: decode(v) for k, v in value["dict"].items()}
    if "tuple" in value:
        return tuple(decode(v) for v in value["tuple"])
    return tf.TensorSpec(value["shape"], tf.as_dtype(value["dtype"]))


def batched(spec):
    """The spec with a batch dimension of any size (a serving signature's)."""
    return tf.nest.map_structure(
        lambda s: tf.TensorSpec((None,) + tuple(s.shape), s.dtype, name=s.name), spec)


def zeros_example(features, labels):
    """One example of zeros as arrays `(x, y)` shaped as encoded `features` and `labels`
    (unknown sizes become 1): data that rebuilds a model without its data."""
    def zeros(spec):
        shape = [1] + [1 if d is None else d for d in spec.shape]
        return np.zeros(shape, spec.dtype.as_numpy_dtype)
    return (tf.nest.map_structure(zeros, decode(features)),
            tf.nest.map_structure(zeros, decode(labels)))
