"""Keras 3 callbacks and compile() settings through `mlbench.fit`, each held to what Keras'
own `fit` does with the same program (the callbacks' own tests, run through mlbench.fit by
benchmarks/keras_callback_conformance.py, cover the rest)."""
import os

import keras
import numpy as np
import pytest
from tensorflow.core.util import event_pb2
from tensorflow.python.lib.io import tf_record

import mlbench

RNG = np.random.RandomState(0)
X = RNG.normal(size=(64, 6)).astype(np.float32)
Y = (X[:, :2] @ np.array([[1.0], [-2.0]], np.float32)).astype(np.float32)


def regression(**compile_options):
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((6,)),
                              keras.layers.Dense(4, activation="relu", name="hidden"),
                              keras.layers.Dense(1, name="out")], name="net")
    model.compile(optimizer=compile_options.pop("optimizer", "sgd"), loss="mse",
                  metrics=["mae"], **compile_options)
    return model


def summaries(logdir):
    """{(folder under logdir, tag)} of every summary in the event files under `logdir`."""
    found = set()
    for folder, _, names in os.walk(logdir):
        for name in (n for n in names if n.startswith("events.out.")):
            for record in tf_record.tf_record_iterator(os.path.join(folder, name)):
                event = event_pb2.Event.FromString(record)
                found |= {(os.path.relpath(folder, logdir), v.tag)
                          for v in event.summary.value}
    return found


def test_keras_tensorboard_callback_writes_what_it_writes_under_keras_fit(tmp_path):
    """Per-batch and per-epoch scalars, histograms, in train/ and validation/: the same
    tags as Keras' fit writes; none of mlbench's own (a run without model_dir writes
    none, even inside the callback's default writer)."""
    written = {}
    for name, fit in (("keras", keras.Model.fit), ("mlbench", mlbench.fit)):
        logdir = str(tmp_path / name)
        fit(regression(), X, Y, batch_size=16, epochs=2, validation_data=(X, Y), verbose=0,
            callbacks=[keras.callbacks.TensorBoard(logdir, update_freq=1, histogram_freq=1,
                                                   write_graph=False)])
        written[name] = summaries(logdir)
    assert ("train", "batch_loss") in written["keras"]
    assert written["mlbench"] == written["keras"]


def test_use_ema_leaves_the_average_in_the_model_and_swap_ema_evaluates_with_it():
    model = regression(optimizer=keras.optimizers.SGD(0.05, use_ema=True, ema_momentum=0.9))
    history = mlbench.fit(model, X, Y, batch_size=16, epochs=3, validation_data=(X, Y),
                          verbose=0, callbacks=[keras.callbacks.SwapEMAWeights()])
    averages = model.optimizer._model_variables_moving_average
    for weight, average in zip(model.trainable_variables, averages):
        np.testing.assert_array_equal(weight.numpy(), average.numpy())  # as fit finalizes
    evaluated = model.evaluate(X, Y, batch_size=64, return_dict=True, verbose=0)
    # the last epoch's validation ran on the averaged weights the model now holds
    assert history.history["val_mae"][-1] == pytest.approx(evaluated["mae"], rel=1e-5)


def test_terminate_on_nan_raising_skips_on_train_end_as_keras_fit_does():
    class Ends(keras.callbacks.Callback):
        ended = False

        def on_train_end(self, logs=None):
            Ends.ended = True
    bad = np.full_like(Y, np.inf)
    with pytest.raises(RuntimeError, match="NaN or Inf"):
        mlbench.fit(regression(), X, bad, batch_size=16, epochs=1, verbose=0,
                    callbacks=[Ends(), keras.callbacks.TerminateOnNaN(raise_error=True)])
    assert not Ends.ended
    history = mlbench.fit(regression(), X, bad, batch_size=16, epochs=2, verbose=0,
                          callbacks=[Ends(), keras.callbacks.TerminateOnNaN()])
    assert Ends.ended and len(history.history["loss"]) == 1  # stopped, returned


def test_compiles_jit_compile_and_steps_per_execution_are_honoured_unless_overridden():
    class Batches(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.ends = 0

        def on_train_batch_end(self, batch, logs=None):
            self.ends += 1
    counted = Batches()
    history = mlbench.fit(regression(jit_compile=True, steps_per_execution=2), X, Y,
                          batch_size=16, epochs=2, verbose=0, callbacks=[counted])
    assert history.result.ran["jit_compile"] is True
    # 8 steps in blocks of at most 2 that end at each epoch's end (4 steps), the first step
    # alone (it is traced on its own): 1, 2, 1 | 2, 2. The default (100) makes 1, 3 | 4.
    assert counted.ends == 5
    history = mlbench.fit(regression(jit_compile=True), X, Y, batch_size=16, epochs=1,
                          verbose=0, jit_compile=False)
    assert history.result.ran["jit_compile"] is False


def test_a_model_without_trainable_weights_runs_its_epochs_as_in_keras():
    class Identity(keras.layers.Layer):
        def call(self, x):
            return x
    model = keras.Sequential([keras.Input((6,)), Identity()])
    model.compile("sgd", "mse")
    history = mlbench.fit(model, X, X, batch_size=16, epochs=2, validation_data=(X, X),
                          verbose=0)
    assert history.history["loss"] == [0.0, 0.0]
    assert history.history["val_loss"] == [0.0, 0.0]
