"""Training images/sec of the same CNN written in Keras 3 and in tf_keras, through the same
mlbench step, alternated in one process (the machine's noise hits both alike).

    .venv/bin/python benchmarks/keras_generations.py [rounds] [batch_size]

The model is a VGG-style CNN on 32x32x3 synthetic images (about 0.3 GFLOPs per image), so
each step is dominated by convolutions, as for the zoo. Prints each round's figures and
the Keras 3 / tf_keras ratio of the medians; precision is 'auto' (float32 on AVX2-only
CPUs, bf16 where it is fast). A ratio near 1 says the Keras 3 path costs nothing extra.
"""
import os
import statistics
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import tf_keras  # noqa: E402

import mlbench  # noqa: E402


def cnn(generation):
    """The same functional model in either generation: 3 conv blocks, then a classifier."""
    layers = generation.layers
    inputs = layers.Input((32, 32, 3))
    x = inputs
    for filters in (64, 128, 256):
        x = layers.Conv2D(filters, 3, padding="same", activation="relu")(x)
        x = layers.Conv2D(filters, 3, padding="same", activation="relu")(x)
        x = layers.MaxPooling2D()(x)
    return generation.Model(inputs, layers.Dense(10)(layers.Flatten()(x)))


def keras3_cnn():
    return cnn(keras)


def tf_keras_cnn():
    return cnn(tf_keras)


def images_per_sec(model, batch_size):
    result = mlbench.benchmark(model, batch_size=batch_size, num_warmup_batches=3,
                               num_batches=15, num_runs=1, verbose=False)
    return result.images_per_sec.mean, result.ran["precision"]


def main(rounds=3, batch_size=64):
    figures = {"keras3": [], "tf_keras": []}
    for i in range(rounds):
        for name, model in (("keras3", keras3_cnn), ("tf_keras", tf_keras_cnn)):
            rate, precision = images_per_sec(model, batch_size)
            figures[name].append(rate)
            print(f"round {i + 1} {name:9s} {rate:8.1f} images/sec ({precision})", flush=True)
    medians = {k: statistics.median(v) for k, v in figures.items()}
    print(f"median: keras3 {medians['keras3']:.1f}, tf_keras {medians['tf_keras']:.1f}; "
          f"keras3 / tf_keras = {medians['keras3'] / medians['tf_keras']:.3f}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
