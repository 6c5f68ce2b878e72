"""Synthetic inputs that live on the device, as on the TF benchmarks page.

Each replica gets one batch created on its own device once
(`experimental_distribute_values_from_function`); every step reuses it, so
neither disk nor host→device copies enter the measurement, and labels stay
fixed.
"""
import dataclasses

import tensorflow as tf

from mlbench.data.base import DataSource


@dataclasses.dataclass
class SyntheticSource(DataSource):
    """Random inputs shaped like the model's ImageNet/BERT input."""
    vocab_size: int = 30522
    max_predictions: int = 20

    @property
    def on_device(self):
        return True

    def replica_batch(self, per_replica_batch, seed):
        """One batch, built on the calling replica's device."""
        if self.kind == "bert":
            return self._bert_batch(per_replica_batch, seed)
        images = tf.random.stateless_uniform((per_replica_batch,) + tuple(self.input_shape),
                                             seed=[seed, 1], dtype=tf.float32)
        labels = tf.random.stateless_uniform((per_replica_batch,), seed=[seed, 2],
                                             maxval=self.num_classes, dtype=tf.int32)
        return images, labels

    def _bert_batch(self, batch, seed):
        seq, preds = self.input_shape[0], self.max_predictions
        ints = lambda shape, hi, s: tf.random.stateless_uniform(  # noqa: E731
            shape, seed=[seed, s], maxval=hi, dtype=tf.int32)
        return {
            "input_word_ids": ints((batch, seq), self.vocab_size, 1),
            "input_mask": tf.ones((batch, seq), tf.int32),
            "input_type_ids": ints((batch, seq), 2, 2),
            "masked_lm_positions": ints((batch, preds), seq, 3),
            "masked_lm_ids": ints((batch, preds), self.vocab_size, 4),
            "masked_lm_weights": tf.ones((batch, preds), tf.float32),
            "next_sentence_labels": ints((batch,), 2, 5),
        }

    def distribute(self, strategy, per_replica_batch, seed=0):
        """Per-replica values created on each replica's own device (a PerReplica structure)."""
        from mlbench.distribute.strategies import worker_devices
        devices = worker_devices(strategy)

        def on_device(ctx):
            # distribute_values_from_function does not place values itself.
            with tf.device(devices[ctx.replica_id_in_sync_group]):
                return self.replica_batch(per_replica_batch, seed + ctx.replica_id_in_sync_group)
        return strategy.experimental_distribute_values_from_function(on_device)

    def eval_dataset(self, input_context, per_replica_batch):
        raise ValueError("synthetic data has no eval set; set `eval_every=0`.")


def for_model(model_info, num_classes=1000, **kwargs):
    """Synthetic data shaped for a registered model."""
    return SyntheticSource(name="synthetic", kind=model_info.kind,
                           input_shape=model_info.input_shape,
                           num_classes=0 if model_info.kind == "bert" else num_classes, **kwargs)
