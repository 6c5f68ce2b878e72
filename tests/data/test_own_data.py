"""Your own data: arrays, datasets, dicts, eval_data; every bad form refused up front."""
import numpy as np
import pytest
import tensorflow as tf

import mlbench
from mlbench import data as data_lib
from conftest import digit_arrays, own_cnn

(X, Y), (XE, YE) = digit_arrays()


def weights_after(data, steps=5, **kwargs):
    result = mlbench.train(model=own_cnn, data=data, global_batch_size=32, train_steps=steps,
                           precision="float32", learning_rate=0.05, verbose=False, **kwargs)
    return result, result.model.get_weights()


def test_own_cnn_on_arrays_reaches_its_target_and_a_dataset_trains_the_same(tmp_path):
    result, _ = weights_after((X, Y), steps=None, eval_data=(XE, YE), train_epochs=6,
                              eval_every_epochs=1, target={"accuracy": 0.9},
                              model_dir=str(tmp_path / "run"))
    assert result.reached_target and result.final_metrics["accuracy"] >= 0.9
    assert result.steps < 6 * 1438 // 32 + 1  # stopped at the target, not at the budget
    # a dataset keeps its own order (as fit keeps it): arrays not shuffled train the same
    _, from_arrays = weights_after((X, Y), data_options={"shuffle": False})
    dataset = tf.data.Dataset.from_tensor_slices((X.astype(np.float64), Y.astype(np.int64)))
    _, from_dataset = weights_after(dataset)
    _, from_dict = weights_after({"train": dataset, "eval": (XE, YE)})
    _, from_batches = weights_after(dataset.batch(32), data_options={"batched": True})
    _, shuffled = weights_after((X, Y))
    for a, b, c, d in zip(from_arrays, from_dataset, from_dict, from_batches):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(a, d)
    assert not all(np.array_equal(a, b) for a, b in zip(from_arrays, shuffled))
    assert not all(np.array_equal(a, b) for a, b in zip(from_arrays, own_cnn().get_weights()))


def test_epochs_come_from_the_cardinality():
    result, _ = weights_after(tf.data.Dataset.from_tensor_slices((X, Y)), steps=None,
                              train_epochs=0.5)
    assert result.steps == int(np.ceil(0.5 * len(X) / 32))


@pytest.mark.parametrize("strategy,devices,k", [("mirrored", 2, 1), ("one_device", None, 2)])
def test_own_model_two_devices_and_accumulation_equal_one_big_batch(strategy, devices, k):
    def one_step(**kwargs):
        return weights_after((X, Y), steps=1, optimizer_options={"momentum": 0.0},
                             **kwargs)[1]
    reference = one_step(strategy="one_device")
    other = one_step(strategy=strategy, num_devices=devices, gradient_accumulation_steps=k)
    for a, b in zip(reference, other):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _unknown_cardinality():
    return tf.data.Dataset.from_tensor_slices((X, Y)).filter(lambda x, y: y >= 0)


@pytest.mark.parametrize("data,extra,needle", [
    ((X, Y[:-1]), {}, "hold [1438] and 1437"),
    ((X, Y + 3), {}, "labels span 3..12, but `model` ('own_cnn') has 10 outputs"),
    (tf.data.Dataset.from_tensor_slices(X), {}, "must yield (features, labels) or"),
    (tf.data.Dataset.from_tensor_slices((X, Y)).batch(8), {}, "give the dataset unbatched"),
    (_unknown_cardinality(), {"train_epochs": 1}, "give `train_steps`"),
    ((X, Y.astype(np.float32)), {}, "floating-point labels"),
    ("mnist", {"eval_data": (XE, YE)}, "`eval_data`"),
    ((X.reshape(len(X), 64), Y), {}, "does not fit `model` ('own_cnn')"),
    ({"train": (X, Y), "test": (XE, YE)}, {}, "must have 'train' and optionally 'eval'"),
])
def test_bad_own_data_is_refused_before_anything_is_written(tmp_path, data, extra, needle):
    arguments = dict(model=own_cnn, data=data, global_batch_size=32, verbose=False,
                     model_dir=str(tmp_path / "run"))
    arguments.update(extra if "train_epochs" in extra else {"train_steps": 2, **extra})
    with pytest.raises(ValueError) as error:
        mlbench.train(**arguments)
    assert needle in str(error.value)
    assert len(str(error.value)) < 500  # arrays are described, never printed
    assert not (tmp_path / "run").exists()


def test_unknown_cardinality_trains_with_train_steps():
    result, _ = weights_after(_unknown_cardinality(), steps=3)
    assert result.steps == 3


def test_registered_data_name_and_existing_names_refused():
    data_lib.register("user_digits_for_test", lambda: {"train": (X, Y), "eval": (XE, YE)})
    try:
        result, _ = weights_after("user_digits_for_test", steps=2)
        assert "accuracy" in result.final_metrics
        with pytest.raises(ValueError, match="already a data name"):
            data_lib.register("user_digits_for_test", lambda: (X, Y))
    finally:
        data_lib.unregister("user_digits_for_test")
    with pytest.raises(ValueError, match="'mnist'.*already a data name"):
        data_lib.register("mnist", lambda: (X, Y))
