"""Your own tf_keras model on your own numpy arrays, then the same model benchmarked.

A notebook user's five lines: build a model in a function, hold (x, y) arrays, call
`mlbench.train`. MLBENCH_EXAMPLE_TINY=1 shortens the runs (the tests do).
"""
import os

import numpy as np
import tf_keras as keras  # tf_keras (Keras 2), as Model Garden: not Keras 3's `keras`
from sklearn.datasets import load_digits

import mlbench

TINY = bool(os.environ.get("MLBENCH_EXAMPLE_TINY"))


def small_cnn():
    """Any tf_keras model; mlbench builds it under its strategy's scope and precision."""
    inputs = keras.Input((8, 8, 1))
    x = keras.layers.Conv2D(32, 3, activation="relu")(inputs)
    x = keras.layers.Flatten()(x)
    return keras.Model(inputs, keras.layers.Dense(10)(x))


digits = load_digits()  # 1,797 real 8×8 digits shipped in scikit-learn's wheel
x, y = (digits.images[..., None] / 16.0).astype(np.float32), digits.target
result = mlbench.train(model=small_cnn, data=(x[:1400], y[:1400]), eval_data=(x[1400:], y[1400:]),
                       global_batch_size=32, train_epochs=2 if TINY else 20, eval_every_epochs=1,
                       target={"accuracy": 0.8 if TINY else 0.95}, learning_rate=0.05)
print(result.reached_target, result.final_metrics, result.ran)

# A regression head on the same data: your loss and metrics, tf_keras names.
def regressor():
    inputs = keras.Input((8, 8, 1))
    return keras.Model(inputs, keras.layers.Dense(1)(keras.layers.Flatten()(inputs)))


fit = mlbench.train(model=regressor, data=(x, y.astype(np.float32)), eval_data=(x, y.astype(np.float32)),
                    loss="mse", metrics=["mean_absolute_error"], global_batch_size=64,
                    train_steps=20 if TINY else 300, learning_rate=0.01)
print(fit.final_metrics)

# Images/sec of your model, the tf_cnn_benchmarks way (synthetic data shaped from its input).
bench = mlbench.benchmark(small_cnn, batch_size=64, num_warmup_batches=2,
                          num_batches=5 if TINY else 100, num_runs=1 if TINY else 5)
print(f"images/sec {bench.images_per_sec.mean:.1f}", bench.mfu)
