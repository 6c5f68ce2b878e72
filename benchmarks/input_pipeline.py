"""Speed of the ImageNet training input pipeline, and real/synthetic for ResNet-50 training.

    .venv/bin/python -m mlbench data imagenet --source=photos --output_dir=data/photos
    .venv/bin/python benchmarks/input_pipeline.py data/photos [batches] [train_batches]

Prints (1) images/sec of the train pipeline alone (JPEG decode, random crop,
flip, resize to 224, normalise), mlbench's stateless copy of Model Garden's
parser against Model Garden's own (stateful draws, not repeatable), alternated
three times in one process, and (2) ResNet-50
training images/sec on synthetic and on real data through mlbench.benchmark,
measured in the same process one after the other, and their ratio (the
benchmarks page lost 0–6 % on ResNet-50; target ratio >= 0.9).
"""
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402
from official.core import config_definitions as cfg  # noqa: E402
from official.core import input_reader  # noqa: E402
from official.vision.dataloaders import classification_input  # noqa: E402

import mlbench  # noqa: E402
from mlbench.data import imagenet  # noqa: E402
from mlbench.data.base import tuned_options  # noqa: E402


def model_garden_train_dataset(source, batch_size, seed):
    """mlbench's training pipeline before 2026-12-05: Model Garden's Parser as it is."""
    parser = classification_input.Parser(output_size=list(source.input_shape[:2]),
                                         num_classes=source.num_classes,
                                         aug_rand_hflip=True, aug_crop=True)
    config = cfg.DataConfig(input_path=list(source.train_files), global_batch_size=batch_size,
                            is_training=True, shuffle_buffer_size=source.shuffle_buffer,
                            seed=seed, deterministic=True,
                            cycle_length=min(len(source.train_files), 16))
    return input_reader.InputReader(
        config, dataset_fn=tf.data.TFRecordDataset,
        decoder_fn=classification_input.Decoder().decode,
        parser_fn=parser.parse_fn(True)).read().with_options(tuned_options())


def pipeline_images_per_sec(data_dir, batches, batch_size=32, model_garden=False):
    source = imagenet.source(data_dir, mlbench.models.info("resnet50"))
    dataset = (model_garden_train_dataset(source, batch_size, 0) if model_garden
               else source.train_dataset(None, batch_size, seed=0))
    iterator = iter(dataset)
    for _ in range(5):  # fill the prefetch buffers, start the thread pools
        next(iterator)
    start = time.perf_counter()
    for _ in range(batches):
        images, _ = next(iterator)
    images.numpy()
    return batches * batch_size / (time.perf_counter() - start)


def main(data_dir, batches=100, train_batches=10):
    ours, garden = [], []
    for _ in range(3):
        ours.append(pipeline_images_per_sec(data_dir, batches))
        garden.append(pipeline_images_per_sec(data_dir, batches, model_garden=True))
    pipe = max(ours)
    print(f"input pipeline alone: {pipe:.1f} images/sec (batch 32, 224x224, 2 cores); "
          f"Model Garden's parser {max(garden):.1f}; ratio {pipe / max(garden):.3f} "
          f"(best of 3 each: {', '.join(f'{a:.0f}/{b:.0f}' for a, b in zip(ours, garden))})")
    rates = {}
    for kind in ("synthetic", "real"):
        result = mlbench.benchmark("resnet50", batch_size=32, data=kind, data_dir=data_dir,
                                   variable_update="replicated", num_warmup_batches=3,
                                   num_batches=train_batches, num_runs=1, verbose=False)
        rates[kind] = result.images_per_sec.mean
        print(f"ResNet-50 training, {kind}: {rates[kind]:.2f} images/sec "
              f"({result.ran['precision']})")
    print(f"real/synthetic: {rates['real'] / rates['synthetic']:.3f}")


if __name__ == "__main__":
    main(sys.argv[1], *[int(a) for a in sys.argv[2:]])
