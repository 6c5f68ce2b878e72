"""Keras 3 models (`import keras`, `tf.keras`) train as tf_keras ones do: accuracy,
equivalences (2 devices = 1, accumulation = big batch), precision, resume, export."""
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

import mlbench
from mlbench.training import optimizers
from mlbench.models import precision
from mlbench.training.loop import DivergenceError
from mlbench.training.step import TrainStep
from mlbench.training.task import ClassificationTask
from conftest import REPO, digit_arrays, own_cnn

(X, Y), (XE, YE) = digit_arrays()


def keras3_cnn():
    return keras.Sequential([keras.Input((8, 8, 1)),
                             keras.layers.Conv2D(16, 3, activation="relu"),
                             keras.layers.Flatten(), keras.layers.Dense(10)], name="k3_cnn")


def tf_keras_api_cnn():
    """The same model written against `tf.keras` (Keras 3 since TF 2.16)."""
    layers = tf.keras.layers
    return tf.keras.Sequential([tf.keras.Input((8, 8, 1)), layers.Conv2D(16, 3, activation="relu"),
                                layers.Flatten(), layers.Dense(10)])


def keras3_mlp():
    return keras.Sequential([keras.Input((16,)), keras.layers.Dense(32, activation="relu"),
                             keras.layers.Dense(4)])


def weights_after(vectors, **overrides):
    arguments = dict(model=keras3_mlp, data=vectors, global_batch_size=32, train_steps=2,
                     precision="float32", learning_rate=0.5, verbose=False,
                     optimizer_options={"momentum": 0.0})
    result = mlbench.train(**{**arguments, **overrides})
    return result, [np.array(v) for v in result.model.trainable_variables]


@pytest.mark.parametrize("build", [keras3_cnn, tf_keras_api_cnn])
def test_a_keras_3_cnn_reaches_accuracy_0_9_on_the_digits(build):
    result = mlbench.train(model=build, data=(X, Y), eval_data=(XE, YE), global_batch_size=32,
                           train_epochs=4, eval_every_epochs=1, learning_rate=0.05,
                           target={"accuracy": 0.9}, verbose=False)
    assert isinstance(result.model, keras.Model)
    assert result.reached_target and result.final_metrics["accuracy"] >= 0.9


def test_keras_3_two_devices_and_accumulation_equal_one_big_batch(vectors):
    _, one = weights_after(vectors)
    _, tiny_lr = weights_after(vectors, learning_rate=1e-12)
    _, two = weights_after(vectors, strategy="mirrored", num_devices=2)
    _, micro = weights_after(vectors, gradient_accumulation_steps=2)
    assert max(np.abs(a - b).max() for a, b in zip(one, tiny_lr)) > 1e-3  # steps moved them
    for a, b, c in zip(one, two, micro):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(c, a, rtol=1e-5, atol=1e-6)


def test_keras_3_under_xla_equals_uncompiled_and_a_nan_loss_stops_the_run(vectors, tmp_path):
    _, plain = weights_after(vectors)
    compiled, weights = weights_after(vectors, jit_compile=True)
    assert compiled.ran["jit_compile"] is True  # XLA compiled it: no silent fallback
    for a, b in zip(plain, weights):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    with pytest.raises(DivergenceError, match="not finite"):
        weights_after(vectors, learning_rate=1e30, train_steps=20, steps_per_loop=5,
                      model_dir=str(tmp_path / "nan"))


def test_keras_3_mixed_bfloat16_runs_and_is_recorded(vectors):
    result, _ = weights_after(vectors, precision="mixed_bfloat16", train_steps=1)
    assert result.ran["precision"] == "mixed_bfloat16"
    assert result.model.layers[0].compute_dtype == "bfloat16"
    assert all(v.dtype == "float32" for v in result.model.trainable_variables)
    assert keras.mixed_precision.global_policy().name == "float32"  # restored


def test_keras_3_float16_overflow_is_skipped_and_counted():
    """A huge loss scale overflows float16 gradients: Keras 3's LossScaleOptimizer skips
    those updates; mlbench counts them and still counts each as a step."""
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    with strategy.scope():
        with precision.policy_scope("mixed_float16"):
            model = keras3_mlp()
        optimizer = precision.wrap_optimizer(keras.optimizers.SGD(0.1), "mixed_float16",
                                             initial_scale=2.0 ** 40)
        optimizer.build(model.trainable_variables)
    assert precision.uses_loss_scale(optimizer)
    step = TrainStep(strategy, model, optimizer, ClassificationTask(4), global_batch_size=8)
    x = tf.random.stateless_normal((8, 16), seed=[1, 2])
    inputs = strategy.experimental_distribute_values_from_function(
        lambda ctx: (x, tf.constant([0, 1, 2, 3] * 2)))
    before = [np.array(v) for v in model.trainable_variables]
    skipped = step.run(inputs, 40).skipped_steps
    halvings = int(round(np.log2(2.0 ** 40 / float(np.array(optimizer.dynamic_scale)))))
    assert skipped == halvings and halvings > 0
    assert step.global_step == 40  # a skipped update is a step, as with tf_keras
    assert model.layers[0].compute_dtype == "float16"
    assert all(v.dtype == "float32" for v in model.trainable_variables)
    assert any(np.abs(a - np.array(v)).max() > 0
               for a, v in zip(before, model.trainable_variables))


def test_keras_3_float16_overflow_on_one_replica_is_skipped_on_both():
    """Keras 3's LossScaleOptimizer looks at the first replica's gradients only; when the
    second one alone overflows, the replicas agree first: skipped, weights stay finite."""
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        with precision.policy_scope("mixed_float16"):
            model = keras3_mlp()
        optimizer = precision.wrap_optimizer(keras.optimizers.SGD(0.01), "mixed_float16")
        optimizer.build(model.trainable_variables)
    step = TrainStep(strategy, model, optimizer, ClassificationTask(4), global_batch_size=16)

    def per_replica(ctx):  # replica 1's inputs are 300x: its float16 gradients overflow
        x = tf.random.stateless_normal((8, 16), seed=[1, 2])
        return x * (1.0 if ctx.replica_id_in_sync_group == 0 else 300.0), \
            tf.constant([0, 1, 2, 3] * 2)
    inputs = strategy.experimental_distribute_values_from_function(per_replica)
    assert step.run(inputs, 1).skipped_steps == 1
    assert float(np.array(optimizer.dynamic_scale)) == 2.0 ** 14
    assert all(np.isfinite(np.array(v)).all() for v in model.trainable_variables)


def test_keras_3_stopped_and_resumed_equals_a_straight_run(vectors, tmp_path):
    _, straight = weights_after(vectors, train_steps=6, optimizer="adam", learning_rate=0.01)
    run = dict(optimizer="adam", learning_rate=0.01, model_dir=str(tmp_path / "run"))
    weights_after(vectors, train_steps=3, **run)
    resumed, weights = weights_after(vectors, train_steps=6, **run)
    assert resumed.resumed_from_step == 3
    for a, b in zip(straight, weights):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_keras_3_losses_metrics_export_and_flops(tmp_path):
    result = mlbench.train(model=keras3_cnn, data=(X, Y), eval_data=(XE, YE),
                           global_batch_size=32, train_steps=20, learning_rate=0.05,
                           precision="float32",  # the served outputs compared below
                           loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                           metrics=[keras.metrics.SparseCategoricalAccuracy(name="acc"),
                                    "top5"], verbose=False)
    expected = keras.metrics.SparseCategoricalAccuracy()
    expected.update_state(YE, result.model.predict(XE, verbose=0))
    assert result.final_metrics["acc"] == pytest.approx(float(expected.result()), abs=1e-6)
    served = tf.saved_model.load(result.export(str(tmp_path / "export")))
    outputs = served.signatures["serving_default"](tf.constant(XE[:4], tf.float32))
    np.testing.assert_allclose(list(outputs.values())[0], result.model(XE[:4]), rtol=1e-5)
    flops = [mlbench.models.flops_of(mlbench.models.resolve(m)) for m in (keras3_cnn, own_cnn)]
    # conv and dense multiply-adds (2 FLOPs each), then their bias adds; the tf_keras twin
    assert flops == [2 * (6 * 6 * 16 * 9 + 576 * 10) + 576 + 10] * 2


def test_optimizers_and_schedules_match_model_gardens_for_keras_3():
    """The same gradients through the tf_keras (Model Garden) and Keras 3 optimizers built
    from one hyperparameters dict: the same learning rate at every step, the same weights."""
    rng = np.random.RandomState(0)
    start = [rng.normal(size=(4, 3)).astype("float32"), rng.normal(size=(3,)).astype("float32")]
    grads = [[rng.normal(size=w.shape).astype("float32") * 3 for w in start] for _ in range(6)]
    for name, options in [("sgd", {}), ("adam", {}), ("adamw", {"weight_decay": 0.01}),
                          ("lamb", {})]:
        for schedule in ("polynomial", "cosine"):
            h = optimizers.hyperparameters(name, 0.05, schedule=schedule, decay_steps=10,
                                           warmup_steps=3, **options)
            (w1, lr1), (w2, lr2) = (_apply(h, start, grads, keras3) for keras3 in (False, True))
            np.testing.assert_allclose(lr2, lr1, rtol=1e-6)
            for a, b in zip(w1, w2):
                np.testing.assert_allclose(b, a, rtol=1e-5, atol=2e-6)
    assert len(set(np.round(lr1, 6))) > 3  # warm-up then decay: the schedule moved


def _apply(h, start, grads, keras3):
    names = ("dense/kernel", "dense/bias")  # 'bias' is excluded from weight decay
    make = (lambda w, n: keras.Variable(w, name=n.split("/")[1])) if keras3 else \
        (lambda w, n: tf.Variable(w, name=n))
    variables = [make(w, n) for w, n in zip(start, names)]
    optimizer = optimizers.from_hyperparameters(h, "keras3" if keras3 else "tf_keras")
    rates = []
    for g in grads:
        optimizer.apply_gradients(zip([tf.constant(x) for x in g], variables))
        rates.append(optimizers.current_learning_rate(optimizer))
    return [np.array(v) for v in variables], rates


@pytest.mark.parametrize("options,needle", [
    ({"optimizer": "lars"}, "Keras 3 has no LARS"),
    ({"optimizer": "lamb", "optimizer_options": {"weight_decay": 0.01}}, "trust ratio"),
])
def test_keras_3_optimizers_without_the_same_maths_are_refused(tmp_path, options, needle):
    with pytest.raises(ValueError, match=needle):
        mlbench.train(model=keras3_cnn, data=(X, Y), global_batch_size=32, train_steps=1,
                      model_dir=str(tmp_path / "run"), verbose=False, **options)
    assert not (tmp_path / "run").exists()


def test_a_keras_3_backend_other_than_tensorflow_is_refused():
    script = ("import keras, mlbench\n"
              "m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])\n"
              "mlbench.train(model=m, data='mnist', global_batch_size=8, train_steps=1)\n")
    env = dict(os.environ, KERAS_BACKEND="numpy", PYTHONPATH=REPO)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode != 0
    assert "on the 'numpy' backend" in done.stderr and "KERAS_BACKEND=tensorflow" in \
        done.stderr


def test_keras_3_in_benchmark_mode_and_as_a_registered_name():
    bench = mlbench.benchmark(keras3_cnn, batch_size=16, num_batches=2, num_warmup_batches=1,
                              num_runs=1, precision="float32", verbose=False)
    assert bench.images_per_sec.mean > 0 and bench.images_per_sec.runs == 1
    mlbench.models.register("k3_cnn_for_test", keras3_cnn, input_shape=(8, 8, 1))
    try:
        result = mlbench.train(model="k3_cnn_for_test", data=(X, Y), eval_data=(XE, YE),
                               global_batch_size=32, train_steps=3, verbose=False)
        assert isinstance(result.model, keras.Model) and "accuracy" in result.final_metrics
        with pytest.raises(ValueError, match="Keras 3 has no LARS"):
            mlbench.train(model="k3_cnn_for_test", data=(X, Y), optimizer="lars",
                          global_batch_size=32, train_steps=3, verbose=False)
    finally:
        mlbench.models.unregister("k3_cnn_for_test")
