"""The data contract every source follows.

A source hands the loop per-replica batches through
`strategy.distribute_datasets_from_function`, so each input pipeline reads
its own shard (`tf.distribute.InputContext`) and batches to the per-replica
size. Image sources yield `(images float32 NHWC, labels int32 0-based)`;
BERT sources yield the pretraining feature dict.
"""
import dataclasses
from typing import Optional, Tuple

import tensorflow as tf


@dataclasses.dataclass
class DataSource:
    """Base class: subclasses implement `train_dataset` and `eval_dataset`.

    Attributes:
      name: what the user asked for ('mnist', 'synthetic', 'imagenet', ...).
      kind: 'image', 'bert' or 'vector' (what tasks and models must match).
      input_shape: per-example shape of the model input.
      num_classes: label count (0 for BERT).
      num_train_examples / num_eval_examples: sizes, when known.
    """
    name: str
    kind: str
    input_shape: Tuple[int, ...]
    num_classes: int
    num_train_examples: Optional[int] = None
    num_eval_examples: Optional[int] = None

    def train_dataset(self, input_context, per_replica_batch, seed, skip_batches=0):
        raise NotImplementedError

    def eval_dataset(self, input_context, per_replica_batch):
        raise NotImplementedError

    @property
    def on_device(self):
        """True for synthetic data that lives on the device (no iterator)."""
        return False

    @property
    def has_eval(self):
        """Whether there is an eval set (synthetic data has none)."""
        return not self.on_device


def shard(dataset, input_context):
    """Shards a dataset per input pipeline (disjoint, as tf.distribute expects)."""
    if input_context and input_context.num_input_pipelines > 1:
        dataset = dataset.shard(input_context.num_input_pipelines,
                                input_context.input_pipeline_id)
    return dataset


def tuned_options(private_threadpool_size=0):
    """tf.data options: autotuned, deterministic order, optional private thread pool."""
    options = tf.data.Options()
    options.autotune.enabled = True
    options.deterministic = True
    options.experimental_optimization.map_parallelization = True
    if private_threadpool_size:
        options.threading.private_threadpool_size = private_threadpool_size
    return options


def finish_train(dataset, per_replica_batch, seed, skip_batches, shuffle_buffer):
    """Shuffle → repeat → batch → skip (resume) → prefetch, reproducibly for `seed`;
    `shuffle_buffer` 0 keeps the order given (a user's own dataset, as `fit` keeps it)."""
    if shuffle_buffer:
        dataset = dataset.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.repeat().batch(per_replica_batch, drop_remainder=True)
    if skip_batches:
        dataset = dataset.skip(skip_batches)
    return dataset.prefetch(tf.data.AUTOTUNE).with_options(tuned_options())


def finish_eval(dataset, per_replica_batch):
    return dataset.batch(per_replica_batch).prefetch(tf.data.AUTOTUNE)
