"""`parts.build`: the model under its policy, the optimizer, resume and warm start, and
input pipelines that skip what a resumed run already consumed."""
import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

import mlbench
from mlbench.plan import parts as parts_lib
from mlbench import plan as plan_lib
from mlbench.plan.arguments import train_defaults
from conftest import vector_source

MLP = dict(model="mlp", global_batch_size=32, train_steps=4, verbose=False,
           model_options={"input_dim": 16, "hidden": (8,)})


def plan_for(**arguments):
    return plan_lib.resolve(plan_lib.train_arguments(dict(MLP, **arguments), train_defaults()))


@pytest.mark.parametrize("precision,compute,loss_scaled", [
    ("float32", "float32", False), ("mixed_bfloat16", "bfloat16", False),
    ("mixed_float16", "float16", True)])
def test_model_is_built_under_the_plans_policy_and_the_global_policy_is_restored(
        precision, compute, loss_scaled):
    built = parts_lib.build(plan_for(data=vector_source(), precision=precision))
    assert built.model.layers[1].compute_dtype == compute
    assert all(v.dtype == tf.float32 for v in built.model.variables)  # variables stay float32
    assert isinstance(built.optimizer, keras.mixed_precision.LossScaleOptimizer) is loss_scaled
    assert keras.mixed_precision.global_policy().name == "float32"
    assert built.resumed_from is None and built.resumed_from_step is None
    assert built.step.gradient_accumulation_steps == 1 and built.step.global_batch_size == 32


def test_resume_restores_the_latest_checkpoint_and_its_step(tmp_path):
    run = str(tmp_path / "run")
    trained = mlbench.train(data=vector_source(), model_dir=run, precision="float32", **MLP)
    built = parts_lib.build(plan_for(data=vector_source(), model_dir=run, train_steps=8,
                                     precision="float32"))
    assert built.resumed_from.endswith("ckpt-4") and built.resumed_from_step == 4
    assert int(built.optimizer.iterations.numpy()) == 4
    for mine, theirs in zip(built.model.variables, trained.model.variables):
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())


def test_warm_start_loads_weights_only(tmp_path):
    run = str(tmp_path / "run")
    trained = mlbench.train(data=vector_source(), model_dir=run, precision="float32", **MLP)
    built = parts_lib.build(plan_for(data=vector_source(), precision="float32",
                                     init_checkpoint=f"{run}/checkpoints/ckpt-4"))
    assert built.resumed_from is None and int(built.optimizer.iterations.numpy()) == 0
    for mine, theirs in zip(built.model.variables, trained.model.variables):
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())


def test_a_missing_init_checkpoint_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match=r"`init_checkpoint` \('.*nowhere/ckpt-3'\) has no "
                                         r".*nowhere/ckpt-3\.index"):
        mlbench.train(data=vector_source(), model_dir=str(tmp_path / "run"),
                      init_checkpoint=str(tmp_path / "nowhere" / "ckpt-3"), **MLP)
    assert not (tmp_path / "run").exists()


def _local(batch):
    features = batch[0]
    return (features.values[0] if hasattr(features, "values") else features).numpy()


def test_train_inputs_skip_the_batches_a_resumed_run_consumed():
    """N + N steps see the data of 2N straight steps: the pipeline skips N batches."""
    plan = plan_for(data=vector_source(), precision="float32")
    straight = parts_lib.train_inputs(plan, done_steps=0)
    batches = [_local(next(straight)) for _ in range(5)]
    resumed = parts_lib.train_inputs(plan, done_steps=3)
    np.testing.assert_array_equal(_local(next(resumed)), batches[3])
    np.testing.assert_array_equal(_local(next(resumed)), batches[4])
    assert not np.array_equal(batches[0], batches[3])


def test_adapted_images_are_resized_and_repeated():
    images = tf.concat([tf.fill((1, 8, 8, 1), 0.25), tf.fill((1, 8, 8, 1), 0.75)], 0)
    out, labels = parts_lib.adapt_images((32, 32, 3))(images, tf.constant([1, 2]))
    assert out.shape == (2, 32, 32, 3) and list(labels.numpy()) == [1, 2]
    np.testing.assert_allclose(out[0], 0.25, atol=1e-6)  # each image keeps its own values
    np.testing.assert_allclose(out[1], 0.75, atol=1e-6)
    rgb = tf.random.stateless_uniform((1, 32, 32, 3), seed=[1, 2])
    grey, _ = parts_lib.adapt_images((32, 32, 1))(rgb, tf.constant([0]))
    np.testing.assert_allclose(grey[..., 0], tf.reduce_mean(rgb, -1), atol=1e-6)


def test_data_without_an_eval_set_gets_no_eval_pipeline():
    plan = plan_for(data="synthetic", model="simple_cnn", model_options={"image_size": 8},
                    precision="float32")
    built = parts_lib.build(plan)
    assert built.make_eval is None
    with_eval = parts_lib.build(plan_for(data=vector_source(), precision="float32"))
    features, _ = next(iter(with_eval.make_eval()))
    assert tuple(features.shape[1:]) == (16,)
