"""Named tfds datasets (`data="tfds:mnist"`, `"tfds:imagenet2012"`), already prepared in `data_dir`.

Nothing is downloaded: the dataset must have been built into `data_dir`
(`tfds build NAME --data_dir=...`) on a machine with network. Images map to
the (float32 image, int32 label) contract; ImageNet-sized images go through
Model Garden's MLPerf crops, small ones are scaled to [0, 1] and resized.
"""
import dataclasses

import tensorflow as tf
import tensorflow_datasets as tfds
from official.vision.ops import preprocess_ops

from mlbench.data.base import DataSource, finish_eval, finish_train, shard

EVAL_SPLITS = ("validation", "test")


@dataclasses.dataclass
class TfdsSource(DataSource):
    builder: object = None
    eval_split: str = "test"
    imagenet_preprocessing: bool = False

    def _map(self, is_training):
        size = self.input_shape[:2]

        def fn(image, label):
            if self.imagenet_preprocessing:
                crop = (preprocess_ops.random_crop_image(image) if is_training
                        else preprocess_ops.center_crop_image(image))
                image = preprocess_ops.normalize_image(
                    tf.image.resize(crop, size), offset=preprocess_ops.MEAN_RGB,
                    scale=preprocess_ops.STDDEV_RGB)
                if is_training:
                    image = tf.image.random_flip_left_right(image)
            else:
                image = tf.image.resize(tf.cast(image, tf.float32) / 255.0, size)
            return tf.cast(image, tf.float32), tf.cast(label, tf.int32)
        return fn

    def _read(self, split, input_context, is_training):
        dataset = self.builder.as_dataset(split=split, as_supervised=True,
                                          shuffle_files=False)
        return shard(dataset, input_context).map(self._map(is_training),
                                                 num_parallel_calls=tf.data.AUTOTUNE)

    def train_dataset(self, input_context, per_replica_batch, seed, skip_batches=0):
        return finish_train(self._read("train", input_context, True), per_replica_batch, seed,
                            skip_batches, shuffle_buffer=10000)

    def eval_dataset(self, input_context, per_replica_batch):
        return finish_eval(self._read(self.eval_split, input_context, False), per_replica_batch)


def source(name, data_dir=None, model_info=None):
    """A prepared tfds dataset; clear errors for unknown names or unprepared data."""
    if name not in tfds.list_builders():
        raise ValueError(f"`data` ('tfds:{name}'): {name!r} is not a tfds dataset.")
    builder = tfds.builder(name, data_dir=data_dir)
    try:  # opening a split is cheap and is what fails when nothing was built
        builder.as_dataset(split="train")
    except (AssertionError, FileNotFoundError, ValueError) as e:
        raise ValueError(f"`data` ('tfds:{name}') is not prepared in `data_dir` "
                         f"({builder.data_dir!r}); mlbench never downloads: run "
                         f"`tfds build {name} --data_dir=...` where there is network.") from e
    info = builder.info
    splits = info.splits
    names = set(splits) or {"train", "test"}  # tfds' mock_data records no split metadata
    eval_split = next((s for s in EVAL_SPLITS if s in names), None)
    if "train" not in names or eval_split is None:
        raise ValueError(f"`data` ('tfds:{name}') needs a 'train' and a validation/test split; "
                         f"it has {sorted(names)}.")
    sizes = {k: splits[k].num_examples for k in splits}
    image_shape = tuple(info.features["image"].shape)
    size = model_info.input_shape[:2] if model_info else image_shape[:2]
    channels = model_info.input_shape[2] if model_info else image_shape[2]
    return TfdsSource(name=f"tfds:{name}", kind="image", input_shape=tuple(size) + (channels,),
                      num_classes=info.features["label"].num_classes,
                      num_train_examples=sizes.get("train"),
                      num_eval_examples=sizes.get(eval_split), builder=builder,
                      eval_split=eval_split, imagenet_preprocessing=name.startswith("imagenet"))
