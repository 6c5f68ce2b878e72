"""BERT pretraining TFRecords (MLPerf/Google format), read by Model Garden's loader.

`official.nlp.data.pretrain_dataloader.BertPretrainDataLoader` decodes
`input_ids, input_mask, segment_ids, masked_lm_positions, masked_lm_ids,
masked_lm_weights, next_sentence_labels` and renames them to the encoder's
`input_word_ids / input_type_ids`; sharding, interleave, shuffle, batch and
prefetch are its InputReader's.
"""
import dataclasses
import os

from official.nlp.data import pretrain_dataloader

from mlbench.data.base import DataSource, tuned_options
from mlbench.data.tfrecords import check_files, find_files

REQUIRED = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids",
            "masked_lm_weights", "next_sentence_labels")


@dataclasses.dataclass
class BertPretrainingSource(DataSource):
    train_files: tuple = ()
    eval_files: tuple = ()
    max_predictions: int = 20
    vocab_size: int = 30522

    def _loader(self, files, is_training, global_batch, seed):
        config = pretrain_dataloader.BertPretrainDataConfig(
            input_path=list(files), global_batch_size=global_batch, is_training=is_training,
            seq_length=self.input_shape[0], max_predictions_per_seq=self.max_predictions,
            drop_remainder=is_training, seed=seed, deterministic=True,
            shuffle_buffer_size=1000)
        return pretrain_dataloader.BertPretrainDataLoader(config)

    def train_dataset(self, input_context, per_replica_batch, seed, skip_batches=0):
        replicas = input_context.num_replicas_in_sync if input_context else 1
        dataset = self._loader(self.train_files, True, per_replica_batch * replicas,
                               seed).load(input_context)
        return (dataset.skip(skip_batches) if skip_batches else dataset).with_options(
            tuned_options())

    def eval_dataset(self, input_context, per_replica_batch):
        replicas = input_context.num_replicas_in_sync if input_context else 1
        return self._loader(self.eval_files, False, per_replica_batch * replicas,
                            None).load(input_context)


def _read_count(data_dir, split):
    path = os.path.join(data_dir, f"{split}.count")
    return int(open(path).read()) if os.path.exists(path) else None


def _shape_checker(seq_length, max_predictions):
    def validate(example, path):
        f = example.features.feature
        if len(f["input_ids"].int64_list.value) != seq_length:
            raise ValueError(f"{path}: input_ids has {len(f['input_ids'].int64_list.value)} "
                             f"tokens; `seq_length` is {seq_length}.")
        if len(f["masked_lm_positions"].int64_list.value) != max_predictions:
            raise ValueError(f"{path}: masked_lm_positions has "
                             f"{len(f['masked_lm_positions'].int64_list.value)} entries; "
                             f"`max_predictions` is {max_predictions}.")
    return validate


def source(data_dir, model_info=None, seq_length=None, max_predictions=20, vocab_size=None,
           verify="auto", train_pattern="train-*.tfrecord", eval_pattern="eval-*.tfrecord"):
    """Checks `data_dir` and returns a BertPretrainingSource."""
    train = find_files(data_dir, train_pattern)
    evals = find_files(data_dir, eval_pattern)
    seq = seq_length or (model_info.input_shape[0] if model_info else 128)
    check_files(train + evals, REQUIRED, verify, _shape_checker(seq, max_predictions))
    vocab_file = os.path.join(data_dir, "vocab.txt")
    if vocab_size is None and os.path.exists(vocab_file):
        vocab_size = sum(1 for _ in open(vocab_file))
    return BertPretrainingSource(
        name="bert_pretraining", kind="bert", input_shape=(seq,), num_classes=0,
        num_train_examples=_read_count(data_dir, "train"),
        num_eval_examples=_read_count(data_dir, "eval"), train_files=tuple(train),
        eval_files=tuple(evals), max_predictions=max_predictions,
        vocab_size=vocab_size or 30522)
