"""train(): bad input fails early with a clear message and writes nothing; gin runs the same."""
import json
import os

import pytest
import tensorflow as tf

import mlbench

GOOD = dict(model="simple_cnn", data="digits", global_batch_size=32, train_steps=2,
            model_options={"image_size": 8}, verbose=False)


@pytest.mark.parametrize("override,needle", [
    ({"model": "resnet5O"}, "'resnet5O'"),
    ({"data": "imagenette"}, "'imagenette'"),
    ({"precision": "fp8"}, "'fp8'"),
    ({"strategy": "horovod"}, "'horovod'"),
    ({"global_batch_size": 30, "gradient_accumulation_steps": 4}, "(30)"),
    ({"train_epochs": 1}, "`train_epochs` (1)"),
    ({"optimizer": "adagrad"}, "'adagrad'"),
    ({"gradient_accumulation_steps": 0}, "(0)"),
    ({"target": {"accuracy": 0.9}}, "names ['accuracy'], which this run does not produce; "
                                    "its metrics are ['top1', 'eval_loss']"),
    ({"data": __import__("numpy").zeros((3, 2))}, "`data` (ndarray(shape=(3, 2)"),
])
def test_bad_input_is_refused_before_anything_is_written(tmp_path, override, needle):
    model_dir = tmp_path / "run"
    with pytest.raises(ValueError) as err:
        mlbench.train(model_dir=str(model_dir), **{**GOOD, **override})
    assert needle in str(err.value)
    assert not model_dir.exists()


def test_model_dir_under_a_file_is_refused(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match="is a file, not a directory"):
        mlbench.train(model_dir=str(tmp_path / "file" / "run"), **GOOD)


def test_misspelled_gin_binding_is_named(tmp_path):
    with pytest.raises(ValueError, match="train_stepz"):
        mlbench.train(gin_bindings=["train.train_stepz = 3"], **GOOD)


def test_unknown_keyword_is_named():
    with pytest.raises(TypeError, match="learnin_rate"):
        mlbench.train(learnin_rate=0.1, **GOOD)


def test_gin_and_keywords_run_the_same(tmp_path):
    bindings = ["train.model = 'simple_cnn'", "train.data = 'digits'",
                "train.global_batch_size = 32", "train.train_steps = 3",
                "train.model_options = {'image_size': 8}", "train.precision = 'float32'",
                "train.verbose = False"]
    by_gin = mlbench.train(gin_bindings=bindings, model_dir=str(tmp_path / "gin"))
    by_kwargs = mlbench.train(model="simple_cnn", data="digits", global_batch_size=32,
                              train_steps=3, model_options={"image_size": 8},
                              precision="float32", verbose=False)
    assert by_gin.final_metrics == pytest.approx(by_kwargs.final_metrics, rel=1e-5)
    operative = (tmp_path / "gin" / "operative_config.gin").read_text()
    assert "train.train_steps = 3" in operative
    saved = json.loads((tmp_path / "gin" / "result.json").read_text())
    assert saved["steps"] == 3 and saved["ran"]["precision"] == "float32"


def test_main_job_gin_reaches_its_target(tmp_path):
    """The `make run` job: real MNIST digits, held-out top-1 >= 0.97."""
    result = mlbench.train(gin_files=["cpu/mnist_cnn.gin"], model_dir=str(tmp_path / "m"),
                           verbose=False)
    assert result.reached_target
    assert result.final_metrics["top1"] >= 0.97
    assert result.time_to_quality_s < result.run_seconds + 1e-9
    assert result.examples_per_second > 0
    assert os.path.exists(tmp_path / "m" / "config.gin")


def test_export_round_trip(tmp_path):
    import numpy as np
    import tensorflow as tf
    import tf_keras as keras
    result = mlbench.train(**GOOD, precision="float32")  # bf16 graphs may fuse differently
    path = result.export(str(tmp_path / "export"))
    images = np.random.RandomState(0).rand(5, 8, 8, 1).astype("float32")
    expected = result.model(images, training=False).numpy()
    served = tf.saved_model.load(path).signatures["serving_default"]
    served_out = list(served(tf.constant(images)).values())[0].numpy()
    np.testing.assert_allclose(served_out, expected, rtol=1e-5, atol=1e-6)
    reloaded = keras.models.load_model(path)
    np.testing.assert_allclose(reloaded(images, training=False).numpy(), expected,
                               rtol=1e-5, atol=1e-6)


def test_tensorboard_layout_reads_back(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    mlbench.train(model_dir=str(tmp_path / "run"), **{**GOOD, "train_steps": 4,
                                                      "eval_every": 2, "steps_per_loop": 2})
    train = EventAccumulator(str(tmp_path / "run" / "train")).Reload()
    validation = EventAccumulator(str(tmp_path / "run" / "validation")).Reload()
    assert {"loss", "learning_rate", "skipped_steps", "steps_per_second"} <= set(
        train.Tags()["tensors"])
    assert {"top1", "eval_loss"} <= set(validation.Tags()["tensors"])
    assert [e.step for e in validation.Tensors("top1")] == [2, 4]
    # one tag for the train and validation loss (the curves overlay), the latter = eval_loss
    values = {tag: [tf.make_ndarray(e.tensor_proto) for e in validation.Tensors(tag)]
              for tag in ("loss", "eval_loss")}
    assert values["loss"] == values["eval_loss"] and len(values["loss"]) == 2
    # hyperparameters at the root: with the hparams plugin's own matching (a session is a
    # run holding them; a scalar run belongs to its longest parent session), the run's
    # validation metrics belong to its session
    from tensorboard.backend.event_processing import plugin_event_multiplexer
    from tensorboard.plugins.hparams import backend_context
    multiplexer = plugin_event_multiplexer.EventMultiplexer()
    multiplexer.AddRunsFromDirectory(str(tmp_path)).Reload()
    runs = multiplexer.Runs()
    sessions = {run for run, tags in runs.items()
                if "_hparams_/session_start_info" in tags["tensors"]}
    assert sessions == {"run"}
    assert backend_context._find_longest_parent_path(sessions, "run/validation") == "run"


def test_rerunning_a_finished_run_reports_it_and_leaves_result_json_byte_identical(
        tmp_path, capsys):
    run = dict(GOOD, train_steps=6, eval_every=3, model_dir=str(tmp_path / "run"))
    first = mlbench.train(**run)
    stored = (tmp_path / "run" / "result.json").read_bytes()
    again = mlbench.train(**dict(run, verbose=True))
    assert (tmp_path / "run" / "result.json").read_bytes() == stored
    assert again.final_metrics == first.final_metrics and again.history == first.history
    assert again.loaded_from == str(tmp_path / "run") and again.resumed_from_step == 6
    assert "already finished at step 6" in capsys.readouterr().out
    more = mlbench.train(**dict(run, train_steps=9))
    assert more.steps == 9 and [h["step"] for h in more.history] == \
        [h["step"] for h in first.history] + [7, 9]
    assert json.loads((tmp_path / "run" / "result.json").read_text())["steps"] == 9


def test_first_progress_line_has_no_nan(capsys):
    mlbench.train(**dict(GOOD, verbose=True, steps_per_loop=1))
    lines = [l for l in capsys.readouterr().out.splitlines() if l.startswith("step ")]
    assert lines[0].startswith("step 1/2") and "examples/sec —  ETA —" in lines[0]
    assert not any("nan" in line for line in lines)
