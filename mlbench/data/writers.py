"""Writers: images → ImageNet-format TFRecords; text → vocabulary → BERT pretraining TFRecords.

They let every real-data code path run offline on real images and text from
PyPI wheels, exactly as on ImageNet and Wikipedia.
"""
import os

import numpy as np
import tensorflow as tf


def _bytes(v):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[v]))


def _int(v):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v)]))


def imagenet_example(image, label, filename, synset=b"", text=b""):
    """One tf.train.Example in `build_imagenet_data.py`'s layout; `label` is 1-based."""
    height, width = image.shape[:2]
    return tf.train.Example(features=tf.train.Features(feature={
        "image/encoded": _bytes(tf.io.encode_jpeg(image, quality=95).numpy()),
        "image/format": _bytes(b"JPEG"), "image/colorspace": _bytes(b"RGB"),
        "image/channels": _int(3), "image/height": _int(height), "image/width": _int(width),
        "image/class/label": _int(label), "image/class/synset": _bytes(synset),
        "image/class/text": _bytes(text), "image/filename": _bytes(filename.encode()),
    }))


def write_imagenet_tfrecords(images, labels, output_dir, split="train", num_shards=2):
    """Writes uint8 RGB images with 0-based `labels` as `{split}-0000i-of-0000n` shards.

    Labels are stored 1-based, as in ImageNet's files. A `.count` side file
    beside each shard records its example count.

    Returns:
      The shard paths.
    """
    if split not in ("train", "validation"):
        raise ValueError(f"`split` ({split!r}) must be 'train' or 'validation'.")
    os.makedirs(output_dir, exist_ok=True)
    paths = [os.path.join(output_dir, f"{split}-{i:05d}-of-{num_shards:05d}")
             for i in range(num_shards)]
    for shard, path in enumerate(paths):
        indices = range(shard, len(images), num_shards)
        with tf.io.TFRecordWriter(path) as writer:
            for i in indices:
                example = imagenet_example(np.asarray(images[i], np.uint8), int(labels[i]) + 1,
                                           f"{split}_{i:08d}.JPEG")
                writer.write(example.SerializeToString())
        with open(path + ".count", "w") as f:
            f.write(str(len(indices)))
    return paths


def to_rgb_uint8(images, image_size):
    """Gray or RGB images in [0, 1] → uint8 RGB resized to image_size × image_size."""
    x = tf.convert_to_tensor(images, tf.float32)
    if x.shape[-1] == 1:
        x = tf.image.grayscale_to_rgb(x)
    x = tf.image.resize(x, (image_size, image_size))
    return tf.cast(tf.clip_by_value(x * 255.0, 0, 255), tf.uint8).numpy()


def photo_crops(count, crop=(375, 500), seed=0):
    """Random crops (with flips) of scikit-learn's two bundled JPEG photos.

    ImageNet-sized real photographs (ImageNet's mean is ~400×350), so JPEG
    decode and crop costs match the real pipeline's.
    """
    from sklearn.datasets import load_sample_images
    photos = load_sample_images().images
    rng = np.random.RandomState(seed)
    out = []
    for i in range(count):
        photo = photos[i % len(photos)]
        top = rng.randint(0, photo.shape[0] - crop[0] + 1)
        left = rng.randint(0, photo.shape[1] - crop[1] + 1)
        patch = photo[top:top + crop[0], left:left + crop[1]]
        out.append(patch[:, ::-1] if rng.rand() < 0.5 else patch)
    return out


def write_bundled_imagenet(output_dir, dataset="digits", image_size=32, num_shards=2,
                           eval_fraction=0.2):
    """Writes a bundled real image set ('digits', 'mnist' or 'photos') as ImageNet TFRecords.

    'photos' has random labels in 0..999 (it is for pipeline speed, not accuracy).

    Returns:
      (train shard paths, validation shard paths).
    """
    from mlbench.data import bundled
    if dataset == "photos":
        images = photo_crops(1000)
        labels = np.random.RandomState(0).randint(0, 1000, len(images))
        split = int(len(images) * (1 - eval_fraction))
        train, evals = (images[:split], labels[:split]), (images[split:], labels[split:])
    elif dataset in ("digits", "mnist"):
        x, y = (bundled.digits_arrays if dataset == "digits" else bundled.mnist_arrays)()
        (xt, yt), (xe, ye) = bundled.split(x, y, eval_fraction)
        train, evals = (to_rgb_uint8(xt, image_size), yt), (to_rgb_uint8(xe, image_size), ye)
    else:
        raise ValueError(f"`dataset` ({dataset!r}) must be 'digits', 'mnist' or 'photos'.")
    return (write_imagenet_tfrecords(*train, output_dir, "train", num_shards),
            write_imagenet_tfrecords(*evals, output_dir, "validation", 1))
