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

The training augmentation is our own copy of Model Garden's: its Parser draws
crops and flips from stateful random ops with a fixed op seed inside a
parallel map, so which image gets which draw depends on thread timing and two
runs with one seed differ from the first batch. Here each example gets a
stateless seed from a `Dataset.random(seed)` stream zipped in order (after the
seeded shuffle, before the parallel map), so a seed fixes every crop and flip,
and a resumed run (which skips batches) sees the augmentation an uninterrupted
run would have seen.
"""
import dataclasses
import os

import tensorflow as tf
from official.core import config_definitions as cfg
from official.core import input_reader
from official.vision.dataloaders import classification_input
from official.vision.ops import preprocess_ops

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

    def _reader(self, files, is_training, global_batch, seed, input_context=None):
        size = list(self.input_shape[:2])
        if is_training:
            pipeline = input_context.input_pipeline_id if input_context else 0
            sample_fn, parse_fn = _with_example_seeds(seed, pipeline), _train_parser(size)
        else:
            parser = classification_input.Parser(output_size=size, num_classes=self.num_classes,
                                                 aug_rand_hflip=True, aug_crop=True)
            sample_fn, parse_fn = None, parser.parse_fn(False)
        config = cfg.DataConfig(
            input_path=list(files), global_batch_size=global_batch, is_training=is_training,
            drop_remainder=is_training, shuffle_buffer_size=self.shuffle_buffer,
            cache=self.cache, seed=seed, deterministic=True,
            cycle_length=min(len(files), 16), sharding=True)
        return input_reader.InputReader(
            config, dataset_fn=tf.data.TFRecordDataset,
            decoder_fn=classification_input.Decoder().decode, sample_fn=sample_fn,
            parser_fn=parse_fn, postprocess_fn=self._zero_based)

    def _zero_based(self, images, labels):
        labels = tf.cast(labels, tf.int32) - self.label_offset
        tf.debugging.assert_greater_equal(labels, 0, message="label below range")
        tf.debugging.assert_less(labels, self.num_classes, message="label above range")
        return images, labels

    def train_dataset(self, input_context, per_replica_batch, seed, skip_batches=0):
        replicas = input_context.num_replicas_in_sync if input_context else 1
        dataset = self._reader(self.train_files, True, per_replica_batch * replicas,
                               seed, input_context).read(input_context)
        if skip_batches:
            dataset = dataset.skip(skip_batches)
        return dataset.with_options(tuned_options(self.private_threadpool_size))

    def eval_dataset(self, input_context, per_replica_batch):
        replicas = input_context.num_replicas_in_sync if input_context else 1
        return self._reader(self.eval_files, False, per_replica_batch * replicas,
                            None).read(input_context)


def _with_example_seeds(seed, pipeline):
    """Pairs each decoded example with its own stateless seed [draw, input pipeline].

    The zip runs in order, so the pairing is fixed by `seed`; the pipeline id keeps
    two workers' streams apart. `seed=None` draws a fresh stream (unseeded runs).
    """
    def apply(dataset):
        seeds = tf.data.Dataset.random(seed=seed).map(
            lambda draw: tf.stack([draw, tf.constant(pipeline, tf.int64)]))
        return tf.data.Dataset.zip((dataset, seeds))
    return apply


def _train_parser(output_size, area_range=(0.08, 1.0), aspect_ratio_range=(3 / 4, 4 / 3)):
    """Model Garden's training preprocessing (Parser with decode_jpeg_only, aug_crop and
    aug_rand_hflip) with stateless draws: random-area crop decoded straight from the
    JPEG (the centre crop when no box fits), flip, resize, ImageNet normalisation."""
    def parse(decoded, seed):
        crop_seed, flip_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 2))
        encoded = decoded["image/encoded"]
        shape = tf.image.extract_jpeg_shape(encoded)
        offset, size, _ = tf.image.stateless_sample_distorted_bounding_box(
            shape, tf.constant([0.0, 0.0, 1.0, 1.0], shape=[1, 1, 4]), seed=crop_seed,
            min_object_covered=area_range[0], aspect_ratio_range=aspect_ratio_range,
            area_range=area_range, max_attempts=10)
        window = tf.stack([offset[0], offset[1], size[0], size[1]])
        image = tf.cond(tf.reduce_all(tf.equal(size[:2], shape[:2])),
                        lambda: preprocess_ops.center_crop_image_v2(encoded, shape),
                        lambda: tf.image.decode_and_crop_jpeg(encoded, window, channels=3))
        image = tf.image.stateless_random_flip_left_right(image, flip_seed)
        image = tf.image.resize(image, output_size)
        image.set_shape(list(output_size) + [3])
        image = preprocess_ops.normalize_image(image, offset=preprocess_ops.MEAN_RGB,
                                               scale=preprocess_ops.STDDEV_RGB)
        return image, tf.cast(decoded["image/class/label"], tf.int32)
    return parse


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
