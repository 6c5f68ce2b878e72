"""The compiled step: accumulation equivalence, mixed precision, loss scaling."""
import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

import mlbench
from mlbench import models
from mlbench.models import precision
from mlbench.training.step import TrainStep
from mlbench.training.task import ClassificationTask


def one_step_weights(source, k, jit, strategy, num_devices=None, learning_rate=0.5):
    """Weights after one step; asserts the step ran compiled exactly when asked."""
    result = mlbench.train(model="mlp", data=source, global_batch_size=32, train_steps=1,
                           gradient_accumulation_steps=k, jit_compile=jit, strategy=strategy,
                           num_devices=num_devices, precision="float32",
                           learning_rate=learning_rate,
                           optimizer_options={"momentum": 0.0}, verbose=False,
                           model_options={"input_dim": 16, "hidden": (32,)})
    assert result.ran["jit_compile"] is jit  # no silent fallback to the uncompiled step
    return [v.numpy() for v in result.model.trainable_variables]


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("strategy,devices", [("one_device", None), ("mirrored", 2)])
def test_microbatches_equal_one_big_batch(vectors, jit, strategy, devices):
    big = one_step_weights(vectors, 1, jit, strategy, devices)
    micro = one_step_weights(vectors, 4, jit, strategy, devices)
    for a, b in zip(big, micro):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_two_devices_equal_one_device(vectors):
    one = one_step_weights(vectors, 1, False, "one_device")
    two = one_step_weights(vectors, 2, False, "mirrored", 2)
    for a, b in zip(one, two):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_step_changes_weights(vectors):
    """Guards the equivalence test: the seed reproduces the initial weights (a negligible
    learning rate leaves them), and one real step moves them away."""
    initial = one_step_weights(vectors, 1, False, "one_device", learning_rate=1e-12)
    again = one_step_weights(vectors, 1, False, "one_device", learning_rate=1e-12)
    trained = one_step_weights(vectors, 1, False, "one_device")
    for a, b in zip(initial, again):
        np.testing.assert_array_equal(a, b)
    assert max(np.abs(a - b).max() for a, b in zip(initial, trained)) > 1e-3


def test_float16_loss_scale_skips_overflowing_steps():
    """A huge initial scale overflows float16 gradients: those steps are skipped and counted."""
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    with strategy.scope():
        with precision.policy_scope("mixed_float16"):
            model = models.get("mlp", num_classes=4)
        optimizer = precision.wrap_optimizer(keras.optimizers.SGD(0.1), "mixed_float16",
                                             initial_scale=2.0 ** 40)
    step = TrainStep(strategy, model, optimizer, ClassificationTask(4), global_batch_size=8)
    x = tf.random.stateless_normal((8, 16), seed=[1, 2])
    y = tf.constant([0, 1, 2, 3] * 2)
    inputs = strategy.experimental_distribute_values_from_function(lambda ctx: (x, y))
    before = [v.numpy() for v in model.trainable_variables]
    skipped = step.run(inputs, 40).skipped_steps
    halvings = int(round(np.log2(2.0 ** 40 / float(optimizer.loss_scale))))
    assert int(skipped) == halvings and halvings > 0
    assert all(v.dtype == tf.float32 for v in model.trainable_variables)
    assert model(x).dtype == tf.float32
    assert model.layers[1].compute_dtype == "float16"
    assert any(np.abs(a - v.numpy()).max() > 0 for a, v in zip(before, model.trainable_variables))


def test_bfloat16_trains_to_lower_loss():
    result = mlbench.train(model="simple_cnn", data="digits", global_batch_size=32,
                           train_steps=40, steps_per_loop=10, precision="mixed_bfloat16",
                           learning_rate=0.05, model_options={"image_size": 8}, verbose=False)
    assert result.ran["precision"] == "mixed_bfloat16"
    assert result.model.layers[1].compute_dtype == "bfloat16"
    assert all(v.dtype == tf.float32 for v in result.model.trainable_variables)
    losses = [h["loss"] for h in result.history]
    assert losses[-1] < 0.5 * losses[0]
    assert result.final_metrics["top1"] > 0.5
