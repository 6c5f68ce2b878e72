"""`training.matching`: a restore matches every variable of the model and the optimizer,
by its path in the object graph and its shape, before any value is assigned."""
import json
import os

import numpy as np
import pytest
import tensorflow as tf

import mlbench
from conftest import vector_source
from mlbench import models
from mlbench.training import matching, optimizers

MLP = dict(model="mlp", global_batch_size=32, verbose=False, precision="float32",
           model_options={"input_dim": 16, "hidden": (8,)})


def checkpoint_of(hidden, build_slots=True):
    model = models.get("mlp", num_classes=4, input_dim=16, hidden=hidden)
    optimizer = optimizers.from_hyperparameters(optimizers.hyperparameters("sgd", 0.1))
    if build_slots:
        optimizers.build_variables(optimizer, model.trainable_variables)
    return tf.train.Checkpoint(model=model, optimizer=optimizer)


def test_a_checkpoint_of_another_width_is_refused_naming_the_variable_before_step_1(
        tmp_path):
    folder = tmp_path / "run"
    mlbench.train(data=vector_source(), model_dir=str(folder), train_steps=4, **MLP)
    # the run's newest checkpoint replaced by a hand-made one of a 9-wide hidden layer
    for name in os.listdir(folder / "checkpoints"):
        if name.startswith("ckpt-4."):
            os.remove(folder / "checkpoints" / name)
    checkpoint_of((9,)).write(str(folder / "checkpoints" / "ckpt-4"))
    result_before = (folder / "result.json").read_text()
    with pytest.raises(matching.CheckpointMismatch) as error:
        mlbench.train(data=vector_source(), model_dir=str(folder), train_steps=8, **MLP)
    message = str(error.value)
    assert "model/layer_with_weights-0/kernel: checkpoint [16, 9] vs run [16, 8]" in message
    assert "ckpt-4" in message and "init_checkpoint=" in message
    assert sorted(n for n in os.listdir(folder / "checkpoints") if n.endswith(".index")) \
        == ["ckpt-4.index"]  # no step ran, nothing saved
    assert (folder / "result.json").read_text() == result_before


def test_missing_slots_and_unknown_variables_are_each_named(tmp_path):
    full = checkpoint_of((8,))
    expected = matching.expected_state(full, ("model", "optimizer"))
    assert any("/.slot/" in path and path.endswith("momentum") for path in expected)
    no_slots = checkpoint_of((8,), build_slots=False).write(str(tmp_path / "a" / "ckpt"))
    with pytest.raises(matching.CheckpointMismatch, match=r"8 variable\(s\) of this run are "
                                                          r"not in it \(model/.*/\.slot/"):
        matching.check_state(expected, no_slots, "way out.", ("model", "optimizer"))
    deeper = checkpoint_of((8, 8)).write(str(tmp_path / "b" / "ckpt"))
    with pytest.raises(matching.CheckpointMismatch,
                       match=r"of its variable\(s\) belong to no object of this run"):
        matching.check_state(expected, deeper, "way out.", ("model", "optimizer"))
    same = checkpoint_of((8,)).write(str(tmp_path / "c" / "ckpt"))
    assert matching.check_state(expected, same, "way out.", ("model", "optimizer")) == \
        len(expected)


def test_a_model_alone_restores_from_a_run_checkpoint_and_refuses_another_width(tmp_path):
    source = checkpoint_of((8,))
    source.model.layers[1].kernel.assign(tf.ones((16, 8)))
    path = source.write(str(tmp_path / "ckpt"))
    target = models.get("mlp", num_classes=4, input_dim=16, hidden=(8,))
    count = matching.restore_items({"model": target}, path, "way out.")
    assert count == 4
    np.testing.assert_array_equal(target.layers[1].kernel.numpy(), np.ones((16, 8)))
    wide = models.get("mlp", num_classes=4, input_dim=16, hidden=(9,))
    before = [v.numpy() for v in wide.variables]
    with pytest.raises(matching.CheckpointMismatch, match="another shape"):
        matching.restore_items({"model": wide}, path, "way out.")
    for value, variable in zip(before, wide.variables):  # nothing was assigned
        np.testing.assert_array_equal(value, variable.numpy())
