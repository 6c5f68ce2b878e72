"""`model.fit` against `mlbench.fit` on patterns from the Keras guides and keras.io examples.

Each pattern is trained by Keras' own `fit` and by `mlbench.fit` with the same seed,
data, batch, epochs and optimizer (what the model's compile() set), both in float32
(Keras' default policy; mlbench's "auto" could pick bf16 on a CPU with bf16 units), each
in its own default compilation (Keras 3 fit's jit_compile='auto', mlbench's 'auto').
Per pattern it prints the final validation metric of both over `--seeds` seeds (mean,
spread) and the training examples/sec of both (epochs after the first, which carries
tracing), the whole call's seconds of both (start-up included: planning, tracing, the
diagnosis), and whether mlbench's mean lies within fit's spread.

    .venv/bin/python benchmarks/fit_parity.py            # every pattern, 3 seeds
    .venv/bin/python benchmarks/fit_parity.py --seeds 1 --patterns binary,regression
"""
import argparse
import dataclasses
import os
import statistics
import sys
import time
from typing import Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import mlbench  # noqa: E402
from mlbench.data.bundled import digits_arrays, mnist_arrays, split  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Pattern:
    """name; build(): a compiled model; data(scale): `fit` keywords (x, y, validation_data,
    batch_size, epochs, ...); metric: the History key compared; tolerance: the absolute
    gap the quick test (tests/trainer/test_fit.py) allows at scale 0.5; keras: generation."""
    name: str
    build: Callable
    data: Callable
    metric: str
    tolerance: float
    keras: str = "keras3"
    fits: int = 1  # calls of fit in a row on the same model (the last one's metric)


def _rows(n, scale):
    return max(64, int(n * scale))


def _tabular(scale, seed=0):
    rng = np.random.RandomState(seed)
    n = _rows(2000, scale)
    x = rng.normal(size=(n, 16)).astype(np.float32)
    return x, n


def _digits(scale):
    (x, y), (xv, yv) = split(*digits_arrays(), eval_fraction=0.25)
    n = _rows(len(x), scale)
    return x[:n], y[:n], xv, yv


def _mlp(k, outputs, activation=None, regularizer=None, inputs=16):
    return k.Sequential([k.Input((inputs,)),
                         k.layers.Dense(32, activation="relu",
                                        kernel_regularizer=regularizer),
                         k.layers.Dense(outputs, activation=activation)])


def _compiled(model, loss, metrics, optimizer=None):
    model.compile(optimizer=optimizer or "adam", loss=loss, metrics=metrics)
    return model


# --- the patterns --------------------------------------------------------------------

def mnist_convnet():
    """keras.io "Simple MNIST convnet", as written (one-hot labels, 'accuracy')."""
    model = keras.Sequential([
        keras.Input((28, 28, 1)), keras.layers.Conv2D(32, 3, activation="relu"),
        keras.layers.MaxPooling2D(2), keras.layers.Conv2D(64, 3, activation="relu"),
        keras.layers.MaxPooling2D(2), keras.layers.Flatten(), keras.layers.Dropout(0.5),
        keras.layers.Dense(10, activation="softmax")])
    return _compiled(model, "categorical_crossentropy", ["accuracy"])


def mnist_data(scale):
    (x, y), (xv, yv) = split(*mnist_arrays(), eval_fraction=0.2)
    n = _rows(len(x), scale)
    return dict(x=x[:n], y=keras.utils.to_categorical(y[:n], 10),
                validation_data=(xv, keras.utils.to_categorical(yv, 10)), batch_size=128,
                epochs=3)


def sparse_logits():
    """TensorFlow's "basic classification": a loss object from logits, 'accuracy'."""
    model = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Flatten(),
                              keras.layers.Dense(64, activation="relu"),
                              keras.layers.Dense(10)])
    return _compiled(model, keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                     ["accuracy"])


def digits_data(scale, epochs=5):
    x, y, xv, yv = _digits(scale)
    return dict(x=x, y=y, validation_data=(xv, yv), batch_size=32, epochs=epochs)


def binary():
    return _compiled(_mlp(keras, 1, "sigmoid"), "binary_crossentropy", ["accuracy", "auc"])


def binary_data(scale):
    x, n = _tabular(scale)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).astype(np.float32)
    return dict(x=x, y=y, validation_split=0.2, batch_size=32, epochs=4)


def multi_label():
    return _compiled(_mlp(keras, 4, "sigmoid"), "binary_crossentropy", ["binary_accuracy"])


def multi_label_data(scale):
    x, n = _tabular(scale, seed=1)
    y = (x[:, :4] + 0.3 * x[:, 4:8] > 0).astype(np.float32)
    return dict(x=x, y=y, validation_split=0.2, batch_size=32, epochs=4)


def regression():
    return _compiled(_mlp(keras, 1), "mse", ["mae"])


def regression_data(scale):
    x, n = _tabular(scale, seed=2)
    y = (x[:, :3].sum(1) + np.sin(x[:, 3])).astype(np.float32)
    return dict(x=x, y=y, validation_split=0.2, batch_size=32, epochs=4)


def one_hot_tf_keras():
    model = _mlp(tf_keras, 4, "softmax")
    return _compiled(model, "categorical_crossentropy", ["accuracy"])


def sparse_tf_keras():
    model = _mlp(tf_keras, 4)
    return _compiled(model, tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                     ["accuracy"])


def four_class_data(scale, one_hot=False):
    x, n = _tabular(scale, seed=3)
    y = x[:, :4].argmax(1).astype(np.int32)
    y = np.eye(4, dtype=np.float32)[y] if one_hot else y
    return dict(x=x, y=y, validation_split=0.2, batch_size=32, epochs=4)


def weighted():
    model = _mlp(keras, 4)
    model.compile(optimizer="adam", metrics=["accuracy"], weighted_metrics=["accuracy"],
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def sample_weight_data(scale):
    data = four_class_data(scale)
    data["sample_weight"] = np.where(data["y"] == 0, 3.0, 1.0).astype(np.float32)
    return data


def class_weight_data(scale):
    return dict(four_class_data(scale), class_weight={0: 3.0, 1: 1.0, 2: 1.0, 3: 0.5})


class Subclassed(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.hidden = keras.layers.Dense(32, activation="relu")
        self.out = keras.layers.Dense(4)

    def call(self, x):
        return self.out(self.hidden(x))


def subclassed():
    return _compiled(Subclassed(), keras.losses.SparseCategoricalCrossentropy(
        from_logits=True), ["accuracy"])


def two_inputs():
    a, b = keras.Input((8,), name="a"), keras.Input((8,), name="b")
    h = keras.layers.Dense(32, activation="relu")(keras.layers.Concatenate()([a, b]))
    return _compiled(keras.Model([a, b], keras.layers.Dense(4)(h)),
                     keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                     ["accuracy"])


def two_inputs_data(scale):
    data = four_class_data(scale)
    data["x"] = [data["x"][:, :8], data["x"][:, 8:]]
    return data


def two_outputs():
    """A classifier and a regressor on one trunk: per-output losses, weights, metrics."""
    inputs = keras.Input((16,))
    h = keras.layers.Dense(32, activation="relu")(inputs)
    model = keras.Model(inputs, {"cls": keras.layers.Dense(4, name="cls")(h),
                                 "reg": keras.layers.Dense(1, name="reg")(h)})
    model.compile(optimizer="adam", loss_weights={"cls": 1.0, "reg": 0.5},
                  loss={"cls": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                        "reg": "mse"}, metrics={"cls": ["accuracy"], "reg": ["mae"]})
    return model


def two_outputs_data(scale):
    data = four_class_data(scale)
    target = (data["x"][:, :3].sum(1) + np.sin(data["x"][:, 3])).astype(np.float32)
    data["y"] = {"cls": data["y"], "reg": target}
    return data


def regularized():
    model = keras.Sequential([keras.Input((16,)),
                              keras.layers.Dense(32, activation="relu",
                                                 kernel_regularizer=keras.regularizers.L2(1e-3)),
                              keras.layers.Dropout(0.2), keras.layers.Dense(4)])
    return _compiled(model, keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                     ["accuracy"])


def augmented():
    """Preprocessing and augmentation layers inside the model (they see `training`)."""
    model = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.RandomTranslation(
        0.1, 0.1, seed=1), keras.layers.Conv2D(16, 3, activation="relu"),
        keras.layers.Flatten(), keras.layers.Dense(10)])
    return _compiled(model, keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                     ["accuracy"])


def batched_dataset_data(scale):
    data = four_class_data(scale)
    n = int(len(data["x"]) * 0.8)
    train = tf.data.Dataset.from_tensor_slices((data["x"][:n], data["y"][:n])).shuffle(
        n, seed=0).batch(32)
    held = tf.data.Dataset.from_tensor_slices((data["x"][n:], data["y"][n:])).batch(32)
    return dict(x=train, validation_data=held, epochs=4)


def plateau_data(scale):
    """digits with ReduceLROnPlateau (patience 1) cutting the rate when val_loss stalls."""
    data = digits_data(scale, epochs=6)
    data["callbacks"] = [keras.callbacks.ReduceLROnPlateau("val_loss", factor=0.5,
                                                           patience=1)]
    return data


class _DigitBatches(keras.utils.PyDataset):
    """keras.io's PyDataset pattern: batches made by indexing arrays."""

    def __init__(self, x, y, batch_size):
        super().__init__()
        self.x, self.y, self.batch_size = x, y, batch_size

    def __len__(self):
        return int(np.ceil(len(self.x) / self.batch_size))

    def __getitem__(self, index):
        part = slice(index * self.batch_size, (index + 1) * self.batch_size)
        return self.x[part], self.y[part]


def pydataset_data(scale):
    data = digits_data(scale)
    return dict(x=_DigitBatches(data["x"], data["y"], data["batch_size"]),
                validation_data=data["validation_data"], epochs=data["epochs"])


PATTERNS = [
    Pattern("mnist_convnet", mnist_convnet, mnist_data, "val_accuracy", 0.05),
    Pattern("sparse_logits", sparse_logits, digits_data, "val_accuracy", 0.08),
    Pattern("binary", binary, binary_data, "val_accuracy", 0.08),
    Pattern("multi_label", multi_label, multi_label_data, "val_binary_accuracy", 0.08),
    Pattern("regression", regression, regression_data, "val_mae", 0.5),
    Pattern("one_hot_tf_keras", one_hot_tf_keras, lambda s: four_class_data(s, True),
            "val_accuracy", 0.1, "tf_keras"),
    Pattern("sparse_tf_keras", sparse_tf_keras, four_class_data, "val_accuracy", 0.1,
            "tf_keras"),
    Pattern("sample_weight", weighted, sample_weight_data, "val_accuracy", 0.1),
    Pattern("class_weight", weighted, class_weight_data, "val_accuracy", 0.1),
    Pattern("subclassed", subclassed, four_class_data, "val_accuracy", 0.1),
    Pattern("two_inputs", two_inputs, two_inputs_data, "val_accuracy", 0.1),
    Pattern("two_outputs", two_outputs, two_outputs_data, "val_cls_accuracy", 0.1),
    Pattern("regularized", regularized, four_class_data, "val_accuracy", 0.1),
    Pattern("augmented", augmented, digits_data, "val_accuracy", 0.15),
    Pattern("batched_dataset", sparse_tf_keras, batched_dataset_data, "val_accuracy", 0.1,
            "tf_keras"),
    Pattern("reduce_lr_on_plateau", sparse_logits, plateau_data, "val_accuracy", 0.08),
    Pattern("pydataset", sparse_logits, pydataset_data, "val_accuracy", 0.08),
    Pattern("two_fits_adam", sparse_logits, digits_data, "val_accuracy", 0.08, fits=2),
]
# the quick subset `make test` runs at half size (tests/trainer/test_fit.py)
SMALL = ("binary", "multi_label", "regression", "sparse_tf_keras", "sample_weight",
         "class_weight", "subclassed", "two_inputs", "two_outputs", "batched_dataset")


@dataclasses.dataclass
class Outcome:
    metric: float
    examples_per_second: float
    call_seconds: float  # the whole fit call(s), start-up included


class _EpochClock:
    """Seconds per epoch, through Keras' own callback events (the same for both loops)."""

    def __init__(self, generation):
        base = keras.callbacks.Callback if generation == "keras3" else \
            tf_keras.callbacks.Callback
        clock = self

        class Clock(base):
            def on_epoch_begin(self, epoch, logs=None):
                clock.start = time.perf_counter()

            def on_epoch_end(self, epoch, logs=None):
                clock.seconds.append(time.perf_counter() - clock.start)
        self.seconds, self.start, self.callback = [], None, Clock()


def _examples(data):
    if isinstance(data["x"], tf.data.Dataset):
        return sum(int(tf.shape(b[1])[0]) for b in data["x"])
    if isinstance(data["x"], keras.utils.PyDataset):
        return len(data["x"].x)
    n = len(tf.nest.flatten(data["y"])[0])
    return int(n * (1 - data.get("validation_split", 0.0)))


def run(pattern, how, seed=0, scale=1.0):
    """One training of `pattern` by `how` ('keras': model.fit, 'mlbench': mlbench.fit)."""
    keras.utils.set_random_seed(seed)
    tf_keras.utils.set_random_seed(seed)
    data = pattern.data(scale)
    model = pattern.build()
    clock = _EpochClock(pattern.keras)
    callbacks = [clock.callback] + list(data.pop("callbacks", []))
    began = time.perf_counter()
    for _ in range(pattern.fits):
        if how == "keras":
            history = model.fit(**data, callbacks=callbacks, verbose=0)
        else:
            history = mlbench.fit(model, **data, callbacks=callbacks, verbose=0,
                                  seed=seed, precision="float32")
    call_seconds = time.perf_counter() - began
    timed = clock.seconds[1:] or clock.seconds
    eps = _examples(data) * len(timed) / sum(timed)
    return Outcome(float(history.history[pattern.metric][-1]), eps, call_seconds)


def _spread(values):
    return statistics.mean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--patterns", default="", help="comma-separated names (default: all)")
    args = parser.parse_args()
    wanted = [p for p in PATTERNS if not args.patterns or p.name in args.patterns.split(",")]
    print(f"| pattern | metric | fit (mean ± sd, {args.seeds} seeds) | mlbench.fit (mean ± sd) | "
          "within fit's spread | fit ex/s | mlbench ex/s | ratio | fit call s | "
          "mlbench call s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    ratios = []
    for pattern in wanted:
        theirs = [run(pattern, "keras", seed) for seed in range(args.seeds)]
        ours = [run(pattern, "mlbench", seed) for seed in range(args.seeds)]
        (fm, fs), (om, osd) = (_spread([o.metric for o in r]) for r in (theirs, ours))
        fe, oe = (statistics.median(o.examples_per_second for o in r) for r in (theirs, ours))
        fc, oc = (statistics.median(o.call_seconds for o in r) for r in (theirs, ours))
        lo, hi = min(o.metric for o in theirs), max(o.metric for o in theirs)
        band = max(2 * fs, hi - lo, 0.005 * abs(fm))
        within = abs(om - fm) <= band
        ratios.append(oe / fe)
        print(f"| {pattern.name} ({pattern.keras}) | {pattern.metric} | {fm:.4f} ± {fs:.4f} | "
              f"{om:.4f} ± {osd:.4f} | {'yes' if within else 'NO'} | {fe:,.0f} | {oe:,.0f} | "
              f"{oe / fe:.2f} | {fc:.1f} | {oc:.1f} |", flush=True)
    print(f"\nmedian speed ratio mlbench.fit / fit: {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
