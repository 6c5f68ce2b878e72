"""Losses and metrics: the zoo's tasks and KerasTask (your own model's loss and metrics)."""
import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

import mlbench
from mlbench.training import task as task_lib
from conftest import digit_arrays, own_cnn

RNG = np.random.RandomState(0)
XR = RNG.normal(size=(256, 16)).astype(np.float32)
YR = XR[:, :3].sum(1)


def regressor():
    inputs = keras.Input((16,))
    hidden = keras.layers.Dense(16, activation="relu")(inputs)
    return keras.Model(inputs, keras.layers.Dense(1)(hidden), name="regressor")


def test_regression_model_trains_with_mse_and_reports_its_metric():
    result = mlbench.train(model=regressor, data=(XR[:192], YR[:192]),
                           eval_data=(XR[192:], YR[192:]), loss="mse",
                           metrics=["mean_absolute_error"], global_batch_size=32,
                           train_steps=60, learning_rate=0.02, precision="float32",
                           verbose=False)
    assert set(result.final_metrics) == {"mean_absolute_error", "eval_loss"}
    predictions = result.model.predict(XR[192:], verbose=0)[:, 0]
    # the reported figures are the eval set's MAE and MSE of the trained model
    np.testing.assert_allclose(result.final_metrics["mean_absolute_error"],
                               np.abs(predictions - YR[192:]).mean(), rtol=1e-4)
    np.testing.assert_allclose(result.final_metrics["eval_loss"],
                               ((predictions - YR[192:]) ** 2).mean(), rtol=1e-4)
    assert result.final_metrics["eval_loss"] < 0.5 * YR.var()  # it learnt


def test_target_on_a_metric_the_run_does_not_produce_is_refused_listing_them(tmp_path):
    with pytest.raises(ValueError) as error:
        mlbench.train(model=regressor, data=(XR, YR), eval_data=(XR, YR), loss="mse",
                      metrics=["mean_absolute_error"], target={"top1": 0.9},
                      global_batch_size=32, train_steps=2, model_dir=str(tmp_path / "r"))
    assert "['mean_absolute_error', 'eval_loss']" in str(error.value)
    assert not (tmp_path / "r").exists()


def test_metrics_sum_over_replicas_and_batches_like_keras_evaluate():
    """accuracy, top-5 and AUC on two replicas and uneven batches equal Keras' evaluate."""
    (x, y), (xe, ye) = digit_arrays()
    binary = (y % 2).astype(np.int32), (ye % 2).astype(np.int32)

    def binary_cnn():
        model = own_cnn(1)
        return keras.Model(model.inputs, keras.layers.Activation("sigmoid")(model.outputs[0]))
    result = mlbench.train(model=binary_cnn, data=(x, binary[0]), eval_data=(xe, binary[1]),
                           loss="binary_crossentropy", metrics=["accuracy", "auc"],
                           global_batch_size=34, train_steps=5, strategy="mirrored",
                           num_devices=2, precision="float32", verbose=False)
    model = binary_cnn()  # outside the run's strategy, with the trained weights
    model.set_weights(result.model.get_weights())
    model.compile(loss="binary_crossentropy",
                  metrics=[keras.metrics.BinaryAccuracy(name="accuracy"),
                           keras.metrics.AUC(name="auc")])
    expected = model.evaluate(xe, binary[1], batch_size=50, verbose=0, return_dict=True)
    for name in ("accuracy", "auc"):
        np.testing.assert_allclose(result.final_metrics[name], expected[name], rtol=1e-5)
    np.testing.assert_allclose(result.final_metrics["eval_loss"], expected["loss"], rtol=1e-4)


def test_top5_accuracy_and_loss_from_probabilities_golden():
    outputs = tf.constant([[0.1, 0.2, 0.3, 0.15, 0.05, 0.2], [0.9, 0.02, 0.02, 0.02, 0.02,
                                                                0.02]])
    with tf.distribute.get_strategy().scope():
        task = task_lib.KerasTask(6, metrics=["top5", "accuracy"], probabilities=True)
    counts = task.eval_counts((None, tf.constant([4, 0])), outputs)
    values = task.metrics({k: float(v) for k, v in counts.items()})
    assert values["top5"] == 0.5  # label 4 has the lowest probability of the first row
    assert values["accuracy"] == 0.5
    # cross-entropy from probabilities: -log(p[label]) averaged
    np.testing.assert_allclose(values["eval_loss"], -(np.log(0.05) + np.log(0.9)) / 2, rtol=1e-5)


def test_produced_metrics_per_model_kind():
    from mlbench import models
    assert task_lib.produced_metrics(models.info("resnet_tiny")) == ("top1", "eval_loss")
    assert task_lib.produced_metrics(models.info("bert_tiny")) == ("masked_lm_accuracy",
                                                                    "eval_loss")
    assert task_lib.produced_metrics(models.info("resnet_tiny"), metrics=["top5"]) == (
        "top5", "eval_loss")


@pytest.mark.parametrize("override,needle", [
    ({"loss": "msee"}, "`loss` ('msee') is not a tf_keras loss name"),
    ({"metrics": ["acuracy"]}, "entry ('acuracy') is not a tf_keras metric name"),
    ({"metrics": "accuracy"}, "must be a list"),
    ({"loss": "mse", "label_smoothing": 0.1}, "`label_smoothing` (0.1)"),
])
def test_bad_loss_or_metrics_are_refused(override, needle):
    (x, y), _ = digit_arrays()
    with pytest.raises(ValueError) as error:
        mlbench.train(model=own_cnn, data=(x, y), global_batch_size=32, train_steps=1,
                      verbose=False, **override)
    assert needle in str(error.value)
