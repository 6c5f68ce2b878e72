"""Speed of the ImageNet training input pipeline, and real/synthetic for ResNet-50 training.

    .venv/bin/python -m mlbench data imagenet --source=photos --output_dir=data/photos
    .venv/bin/python benchmarks/input_pipeline.py data/photos [batches] [train_batches]

Prints (1) images/sec of the train pipeline alone (JPEG decode, random crop,
flip, resize to 224, normalise; Model Garden's parser) and (2) ResNet-50
training images/sec on synthetic and on real data through mlbench.benchmark,
measured in the same process one after the other, and their ratio (the
benchmarks page lost 0–6 % on ResNet-50; target ratio >= 0.9).
"""
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import mlbench  # noqa: E402
from mlbench.data import imagenet  # noqa: E402


def pipeline_images_per_sec(data_dir, batches, batch_size=32):
    source = imagenet.source(data_dir, mlbench.models.info("resnet50"))
    iterator = iter(source.train_dataset(None, batch_size, seed=0))
    for _ in range(5):  # fill the prefetch buffers, start the thread pools
        next(iterator)
    start = time.perf_counter()
    for _ in range(batches):
        images, _ = next(iterator)
    images.numpy()
    return batches * batch_size / (time.perf_counter() - start)


def main(data_dir, batches=100, train_batches=10):
    pipe = pipeline_images_per_sec(data_dir, batches)
    print(f"input pipeline alone: {pipe:.1f} images/sec (batch 32, 224x224, 2 cores)")
    rates = {}
    for kind in ("synthetic", "real"):
        result = mlbench.benchmark("resnet50", batch_size=32, data=kind, data_dir=data_dir,
                                   variable_update="replicated", num_warmup_batches=3,
                                   num_batches=train_batches, num_runs=1, verbose=False)
        rates[kind] = result.images_per_sec["mean"]
        print(f"ResNet-50 training, {kind}: {rates[kind]:.2f} images/sec "
              f"({result.ran['precision']})")
    print(f"real/synthetic: {rates['real'] / rates['synthetic']:.3f}")


if __name__ == "__main__":
    main(sys.argv[1], *[int(a) for a in sys.argv[2:]])
