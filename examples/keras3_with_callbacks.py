"""A Keras 3 model (`import keras`, as today's tutorials write it) trained by mlbench,
stopped early by Keras' own EarlyStopping and saved at its best by ModelCheckpoint.

An epoch, for Keras callbacks, is one eval period (`eval_every_epochs=1`: one pass over
the data); their logs carry Keras' names (`loss`, `val_loss`, `val_accuracy`).
MLBENCH_EXAMPLE_TINY=1 shortens the run (the tests do).
"""
import os

import keras
import numpy as np
from sklearn.datasets import load_digits

import mlbench

TINY = bool(os.environ.get("MLBENCH_EXAMPLE_TINY"))


def small_cnn():
    """Any Keras 3 model; mlbench builds it under its strategy's scope and precision."""
    return keras.Sequential([
        keras.Input((8, 8, 1)),
        keras.layers.Conv2D(32, 3, activation="relu"),
        keras.layers.Flatten(),
        keras.layers.Dense(10),
    ])


digits = load_digits()  # 1,797 real 8×8 digits shipped in scikit-learn's wheel
x, y = (digits.images[..., None] / 16.0).astype(np.float32), digits.target
os.makedirs("runs", exist_ok=True)
callbacks = [
    keras.callbacks.EarlyStopping(monitor="val_loss", patience=2, restore_best_weights=True),
    keras.callbacks.ModelCheckpoint("runs/keras3_best.keras", monitor="val_accuracy",
                                    save_best_only=True),
]
result = mlbench.train(model=small_cnn, data=(x[:1400], y[:1400]),
                       eval_data=(x[1400:], y[1400:]), global_batch_size=32,
                       train_epochs=3 if TINY else 40, eval_every_epochs=1,
                       optimizer="adam", learning_rate=0.003, callbacks=callbacks,
                       model_dir="runs/keras3_digits")
print(result.status, result.steps, result.final_metrics)
print({k: [round(v, 4) for v in values] for k, values in result.keras_history.items()
       if k in ("loss", "val_loss", "val_accuracy")})
best = keras.models.load_model("runs/keras3_best.keras")  # Keras 3's own format
print("best saved model, eval accuracy:",
      float(np.mean(np.argmax(best.predict(x[1400:], verbose=0), -1) == y[1400:])))
