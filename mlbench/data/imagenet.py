"""ImageNet TFRecords: the standard format, read with Model Garden's pipeline.

Format (TF's `build_imagenet_data.py`, read by Model Garden and the MLPerf
reference): `image/encoded` JPEG, `image/class/label` in 1..1000 (0 was
background), `image/height|width|channels|colorspace|format|filename`,
`image/class/synset|text`; shards `train-00000-of-01024`,
`validation-00000-of-00128`.

Reading reuses `official.core.input_reader.InputReader` (file sharding per
worker via InputContext, parallel interleave, shuffle, cache, batch, prefetch)
with `official.vision.dataloaders.classification_input` Decoder/Parser, whose
preprocessing is the MLPerf ResNet one: train = random-area crop (8–100 %) +
resize + horizontal flip; eval = central crop (87.5 %) + resize; both
normalised by the ImageNet mean/std.
"""
import dataclasses
import os

import tensorflow as tf
from official.core import config_definitions as cfg
from official.core import input_reader
from official.vision.dataloaders import classification_input

from mlbench.data.base import DataSource, tuned_options
from mlbench.data.tfrecords import check_files, find_files

REQUIRED = ("image/encoded", "image/class/label")
SPLITS = {"train": "train-?????-of-?????", "validation": "validation-?????-of-?????"}


@dataclasses.dataclass
class ImageNetSource(DataSource):
    """ImageNet-format TFRecords in `data_dir`; labels become 0-based."""
    data_dir: str = ""
    train_files: tuple = ()
    eval_files: tuple = ()
    label_offset: int = 1
    shuffle_buffer: int = 10000
    cache: bool = False
    private_threadpool_size: int = 0

    def _reader(self, files, is_training, global_batch, seed):
        size = list(self.input_shape[:2])
        parser = classification_input.Parser(output_size=size, num_classes=self.num_classes,
                                             aug_rand_hflip=True, aug_crop=True)
        config = cfg.DataConfig(
            input_path=list(files), global_batch_size=global_batch, is_training=is_training,
            drop_remainder=is_training, shuffle_buffer_size=self.shuffle_buffer,
            cache=self.cache, seed=seed, deterministic=True,
            cycle_length=min(len(files), 16), sharding=True)
        return input_reader.InputReader(
            config, dataset_fn=tf.data.TFRecordDataset,
            decoder_fn=classification_input.Decoder().decode,
            parser_fn=parser.parse_fn(is_training), postprocess_fn=self._zero_based)

    def _zero_based(self, images, labels):
        labels = tf.cast(labels, tf.int32) - self.label_offset
        tf.debugging.assert_greater_equal(labels, 0, message="label below range")
        tf.debugging.assert_less(labels, self.num_classes, message="label above range")
        return images, labels

    def train_dataset(self, input_context, per_replica_batch, seed, skip_batches=0):
        replicas = input_context.num_replicas_in_sync if input_context else 1
        dataset = self._reader(self.train_files, True, per_replica_batch * replicas,
                               seed).read(input_context)
        if skip_batches:
            dataset = dataset.skip(skip_batches)
        return dataset.with_options(tuned_options(self.private_threadpool_size))

    def eval_dataset(self, input_context, per_replica_batch):
        replicas = input_context.num_replicas_in_sync if input_context else 1
        return self._reader(self.eval_files, False, per_replica_batch * replicas,
                            None).read(input_context)


def _label_checker(num_classes, offset):
    def validate(example, path):
        label = example.features.feature["image/class/label"].int64_list.value[0]
        if not offset <= label < num_classes + offset:
            raise ValueError(f"{path}: label {label} is out of range "
                             f"[{offset}, {num_classes + offset - 1}].")
    return validate


IMAGENET_TRAIN_EXAMPLES, IMAGENET_EVAL_EXAMPLES = 1_281_167, 50_000


def source(data_dir, model_info=None, num_classes=1000, image_size=None, verify="auto",
           cache=False, shuffle_buffer=10000, label_offset=1, private_threadpool_size=0,
           num_train_examples=None, num_eval_examples=None):
    """Checks `data_dir` and returns an ImageNetSource shaped for the model.

    Example counts come from the arguments, else the writer's `.count` side
    files, else ILSVRC-2012's sizes when there are 1,024 train shards.
    """
    train = find_files(data_dir, SPLITS["train"])
    evals = find_files(data_dir, SPLITS["validation"])
    check_files(train + evals, REQUIRED, verify, _label_checker(num_classes, label_offset))
    size = image_size or (model_info.input_shape[0] if model_info else 224)
    return ImageNetSource(
        name="imagenet", kind="image", input_shape=(size, size, 3), num_classes=num_classes,
        num_train_examples=num_train_examples or _count(train, IMAGENET_TRAIN_EXAMPLES, 1024),
        num_eval_examples=num_eval_examples or _count(evals, IMAGENET_EVAL_EXAMPLES, 128),
        data_dir=data_dir, train_files=tuple(train), eval_files=tuple(evals),
        label_offset=label_offset, cache=cache, shuffle_buffer=shuffle_buffer,
        private_threadpool_size=private_threadpool_size)


def _count(files, imagenet_count, imagenet_shards):
    """Example count from the writer's `.count` side files (ImageNet's own files have none)."""
    total = 0
    for path in files:
        side = path + ".count"
        if not os.path.exists(side):
            return imagenet_count if len(files) == imagenet_shards else None
        with open(side) as f:
            total += int(f.read())
    return total
