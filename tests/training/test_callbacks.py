"""Callbacks: stock Keras callbacks of both generations get `fit`'s events and can stop a
run; mlbench's own listeners share the base; bad callbacks are refused up front."""
import csv

import keras
import numpy as np
import pytest
import tf_keras

import mlbench
from mlbench.training.callbacks import CallbackError, keras_history
from mlbench.training.checkpoints import latest_checkpoint
from conftest import digit_arrays, own_cnn

(X, Y), (XE, YE) = digit_arrays()


def keras3_cnn():
    return keras.Sequential([keras.Input((8, 8, 1)),
                             keras.layers.Conv2D(16, 3, activation="relu"),
                             keras.layers.Flatten(), keras.layers.Dense(10)])


GENERATIONS = {"keras3": (keras3_cnn, keras.callbacks, "keras"),
               "tf_keras": (own_cnn, tf_keras.callbacks, "keras")}


def train(model, tmp_path, callbacks, **overrides):
    arguments = dict(model=model, data=(X, Y), eval_data=(XE, YE), global_batch_size=32,
                     train_steps=50, eval_every=5, steps_per_loop=5, verbose=False,
                     model_dir=str(tmp_path / "run"), callbacks=callbacks)
    return mlbench.train(**{**arguments, **overrides})


@pytest.mark.parametrize("generation", ["keras3", "tf_keras"])
def test_early_stopping_model_checkpoint_and_csv_logger_work_unchanged(tmp_path, generation):
    """A learning rate too small to move float32 weights keeps val_loss exactly constant:
    epoch 0 improves on nothing, epoch 1 does not improve, so patience=1 stops the run
    at its second eval (step 10 of 50) and save_best_only writes epoch 1's model only."""
    build, callbacks, extension = GENERATIONS[generation]
    best = str(tmp_path / "run" / ("best-{epoch:02d}." + extension))
    result = train(build, tmp_path, [
        callbacks.EarlyStopping(monitor="val_loss", patience=1),
        callbacks.ModelCheckpoint(best, monitor="val_loss", save_best_only=True),
        callbacks.CSVLogger(str(tmp_path / "log.csv")), callbacks.TerminateOnNaN()],
        learning_rate=1e-12)
    assert (result.status, result.steps) == ("stopped", 10)
    assert sorted(p.name for p in (tmp_path / "run").glob("best-*")) == \
        ["best-01." + extension]
    assert latest_checkpoint(str(tmp_path / "run")).endswith(
        "ckpt-10")
    history = result.keras_history
    evals = [r["metrics"] for r in result.history if "metrics" in r]
    assert history["val_loss"][0] == history["val_loss"][1] == evals[1]["eval_loss"]
    with open(tmp_path / "log.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2
    for key in ("loss", "val_loss", "val_accuracy"):
        np.testing.assert_allclose([float(r[key]) for r in rows], history[key], rtol=1e-12)
    # as Keras' fit: no learning_rate column unless a learning-rate callback logs it
    assert set(rows[0]) == {"epoch", "loss", "accuracy", "val_loss", "val_accuracy"}
    again = train(build, tmp_path, [], learning_rate=1e-12)  # the same run: its stored result
    assert again.loaded_from and (again.status, again.steps) == ("stopped", 10)


def test_epochs_are_eval_periods_with_keras_names_and_the_mean_training_loss(tmp_path):
    seen = []
    record = keras.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: seen.append((epoch, dict(logs))),
        on_train_batch_end=lambda batch, logs: seen.append(("batch", batch, dict(logs))))
    result = train(keras3_cnn, tmp_path, [record], train_steps=12, eval_every=6,
                   steps_per_loop=3, learning_rate=0.05)
    epochs = [s for s in seen if s[0] != "batch"]
    assert [e for e, _ in epochs] == [0, 1]
    batches = [s for s in seen if s[0] == "batch"]
    assert [b for _, b, _ in batches] == [0, 1, 2, 0, 1]  # 1 (compile) + 3 + 2 steps, 3 + 3
    assert set(batches[0][2]) == {"loss", "accuracy"}  # as fit's batch logs
    blocks = [(h["step"], h["loss"]) for h in result.history]
    steps = [b - a for a, b in zip([0] + [s for s, _ in blocks], [s for s, _ in blocks])]
    assert steps == [1, 3, 2, 3, 3]  # blocks end every 3 steps and at each eval
    expected_loss = sum(n * loss for n, (_, loss) in zip(steps[:3], blocks[:3])) / 6
    assert epochs[0][1]["loss"] == pytest.approx(expected_loss, rel=1e-12)
    assert epochs[1][1]["val_accuracy"] == result.final_metrics["accuracy"]
    assert epochs[1][1]["val_loss"] == result.final_metrics["eval_loss"]
    # Keras' meanings: a plain metric name is the training figure (over the epoch's
    # training batches), the validation one is val_<metric>
    assert set(epochs[1][1]) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert epochs[1][1]["accuracy"] == result.history[-1]["train_metrics"]["accuracy"]
    assert keras_history(result.history) == {k: [e[1][k] for e in epochs] for k in epochs[0][1]}


def test_an_mlbench_callback_sees_run_events_and_can_stop_the_run(tmp_path):
    class StopAtAccuracy(mlbench.Callback):
        def __init__(self):
            self.events = []

        def on_run_start(self):
            self.events.append("start")

        def on_eval_stop(self, step, metrics):
            self.events.append(step)
            if metrics["accuracy"] > 0.5:
                self.model.stop_training = True

    watcher = StopAtAccuracy()
    result = train(keras3_cnn, tmp_path, [watcher], learning_rate=0.1, steps_per_loop=50)
    assert watcher.events[0] == "start" and result.status == "stopped"
    assert result.steps == watcher.events[-1] < 50 and result.final_metrics["accuracy"] > 0.5


def test_a_callback_that_raises_fails_the_run_naming_it(tmp_path):
    def broken(epoch, logs):
        raise KeyError("no such key")
    with pytest.raises(CallbackError, match="callback LambdaCallback raised in on_epoch_end"):
        train(keras3_cnn, tmp_path, [keras.callbacks.LambdaCallback(on_epoch_end=broken)],
              train_steps=5)


@pytest.mark.parametrize("callbacks,needle", [
    ([keras.callbacks.EarlyStopping(), "early"], r"entry \('early'\) is not a callback"),
    (keras.callbacks.EarlyStopping(), "must be a list"),
    ([keras.callbacks.ProgbarLogger()], "prints its own progress"),
    ([keras.callbacks.BackupAndRestore("backup")], "resumes from the checkpoints"),
])
def test_bad_callbacks_are_refused_before_model_dir_exists(tmp_path, callbacks, needle):
    with pytest.raises(ValueError, match=needle):
        train(keras3_cnn, tmp_path, callbacks)
    assert not (tmp_path / "run").exists()


def test_keras_3_monitors_in_auto_mode_learn_which_way_mlbenchs_metrics_improve(tmp_path):
    """Keras 3 reads 'auto' from compiled metrics (mlbench's model has none): val_accuracy
    is maximised, val_loss minimised, so ModelCheckpoint works with its defaults."""
    best = keras.callbacks.ModelCheckpoint(str(tmp_path / "best.keras"), monitor="val_accuracy",
                                           save_best_only=True)
    by_loss = keras.callbacks.EarlyStopping(monitor="val_loss", patience=5)
    train(keras3_cnn, tmp_path, [best, by_loss], train_steps=10, learning_rate=0.05)
    assert (best.mode, by_loss.mode) == ("max", "min") and (tmp_path / "best.keras").exists()
    assert best.best == max(keras_history_of(tmp_path)["val_accuracy"])


def keras_history_of(tmp_path):
    import json
    return keras_history(json.loads((tmp_path / "run" / "result.json").read_text())["history"])


def test_a_failed_run_is_told_after_its_stop_with_the_divergence_named(tmp_path):
    """`on_run_error` comes after `on_run_stop(False)`, with the error the run raises; the
    diagnosis (a listener itself) has named the first non-finite tensor in it by then."""
    from mlbench.training.loop import DivergenceError

    class Seen(mlbench.Callback):
        def __init__(self):
            self.events = []

        def on_run_stop(self, reached_target):
            self.events.append(("stop", reached_target))

        def on_run_error(self, error):
            self.events.append(("error", error))
    seen = Seen()
    with pytest.raises(DivergenceError) as raised:
        mlbench.train(model="simple_cnn", data="digits", model_options={"image_size": 8},
                      global_batch_size=32, train_steps=20, steps_per_loop=10,
                      precision="float32", learning_rate=1e30, callbacks=[seen],
                      verbose=False)
    assert [e[0] for e in seen.events] == ["stop", "error"] and seen.events[0][1] is False
    assert seen.events[1][1] is raised.value
    assert raised.value.finding.verdict == "diverged" and "a replay from step 0" in str(raised.value)


@pytest.mark.parametrize("generation", ["keras3", "tf_keras"])
def test_terminate_on_nan_stops_and_returns_as_in_keras_fit(tmp_path, generation):
    """With Keras' TerminateOnNaN a non-finite loss stops the run and it returns (no
    DivergenceError): `model.stop_training` set, the history ends at the NaN block, no
    checkpoint of the diverged weights, the numerics finding names it; as Keras' fit, whose
    History also ends with the NaN epoch."""
    build, callbacks, _ = GENERATIONS[generation]
    result = train(build(), tmp_path, [callbacks.TerminateOnNaN()], learning_rate=1e30,
                   precision="float32", checkpoint_every=5)
    assert result.status == "stopped" and result.model.stop_training is True
    assert not np.isfinite(result.history[-1]["loss"]) and result.steps < 50
    assert all(np.isfinite(r["loss"]) for r in result.history[:-1])
    saved = latest_checkpoint(str(tmp_path / "run"))
    assert saved is None or int(saved.rsplit("-", 1)[1]) < result.steps
    numerics = [f for f in result.diagnosis if f.topic == "numerics"][0]
    assert numerics.verdict == "non-finite loss" and numerics.status == "problem"
    # Keras' own fit on the same model and rate: it stops too, its History ending in NaN
    model = build()
    optimizer = (keras.optimizers.SGD(1e30) if generation == "keras3"
                 else tf_keras.optimizers.SGD(1e30))
    model.compile(optimizer=optimizer, loss=(keras if generation == "keras3" else tf_keras)
                  .losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(X, Y, batch_size=32, epochs=5, verbose=0,
                        callbacks=[callbacks.TerminateOnNaN()])
    assert model.stop_training is True and not np.isfinite(history.history["loss"][-1])
