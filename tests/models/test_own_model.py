"""Your own model: a function or an instance, registered names, benchmark mode, FLOPs."""
import numpy as np
import pytest
import tf_keras as keras

import mlbench
from mlbench import models
from mlbench.models import own
from conftest import digit_arrays, own_cnn

(X, Y), (XE, YE) = digit_arrays()
SMALL = dict(global_batch_size=32, train_steps=2, verbose=False)


def test_a_function_is_described_without_building_it_eagerly():
    info = own.describe(own_cnn)
    assert (info.name, info.input_shape, info.kind, info.output_width, info.own) == \
        ("own_cnn", (8, 8, 1), "image", 10, True)
    assert info.instance is None and info.policy == "float32"


def test_non_models_are_named():
    with pytest.raises(ValueError, match="is not a Keras model"):
        mlbench.train(model=lambda: "not a model", data=(X, Y), **SMALL)


def test_instance_trains_on_one_device_and_keeps_its_weights_object(tmp_path):
    model = own_cnn()
    result = mlbench.train(model=model, data=(X, Y), eval_data=(XE, YE), **SMALL,
                           model_dir=str(tmp_path / "run"))
    assert result.model is model
    assert result.ran["precision"] == "float32"  # 'auto' = the policy it was built under
    assert set(result.final_metrics) == {"accuracy", "eval_loss"}


@pytest.mark.parametrize("override,needle", [
    ({"strategy": "mirrored", "num_devices": 2}, "pass a function that builds it"),
    ({"precision": "mixed_bfloat16"}, "differs from the dtype policy 'float32'"),
])
def test_instance_where_it_cannot_be_used_is_refused(tmp_path, override, needle):
    with pytest.raises(ValueError, match=needle):
        mlbench.train(model=own_cnn(), data=(X, Y), model_dir=str(tmp_path / "r"),
                      **{**SMALL, **override})
    assert not (tmp_path / "r").exists()


def test_register_as_decorator_then_by_name_and_existing_names_refused():
    @models.register("user_cnn_for_test", input_shape=(8, 8, 1))
    def user_cnn(num_classes=10):
        return own_cnn(num_classes)
    try:
        assert user_cnn is not None and "user_cnn_for_test" in models.list_models()
        result = mlbench.train(model="user_cnn_for_test", data=(X, Y), eval_data=(XE, YE),
                               **SMALL)
        assert result.model.output_shape == (None, 10)  # num_classes from the labels
        assert "accuracy" in result.final_metrics
        with pytest.raises(ValueError, match="already a registered model"):
            models.register("user_cnn_for_test", user_cnn)
    finally:
        models.unregister("user_cnn_for_test")
    with pytest.raises(ValueError, match="'simple_cnn'.*already a registered model"):
        models.register("simple_cnn", own_cnn)
    assert models.info("simple_cnn").source == "mlbench"  # the built-in one stays


def test_own_model_benchmarks_on_synthetic_data_shaped_from_its_input():
    result = mlbench.benchmark(own_cnn, batch_size=8, num_warmup_batches=1, num_batches=2,
                               num_runs=1, precision="float32", verbose=False)
    assert result.model == "own_cnn" and result.ran["steps_run"] == 1 + 3
    # FLOPs from its graph: conv 6·6·16·9 MACs + dense 576·10 MACs, ×2, ×3 for training
    assert result.flops_per_example == 3 * 2 * (6 * 6 * 16 * 9 + 576 * 10) + 3 * (
        6 * 6 * 16 + 10)  # + the bias adds the profiler counts


def test_own_model_is_exported_and_reloaded(tmp_path):
    result = mlbench.train(model=own_cnn, data=(X, Y), precision="float32", **SMALL)
    path = result.export(str(tmp_path / "export"))
    reloaded = keras.models.load_model(path)
    np.testing.assert_allclose(reloaded.predict(XE[:4], verbose=0),
                               result.model.predict(XE[:4], verbose=0), rtol=1e-5, atol=1e-6)
