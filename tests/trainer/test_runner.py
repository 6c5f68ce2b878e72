"""`runner`: when a stored run counts as finished, what callbacks and TensorBoard are told,
where non-chief workers write, and the summary line."""
import dataclasses
import json
import os

import pytest
import tensorflow as tf

from mlbench import plan as plan_lib
from mlbench.trainer import runner
from mlbench.plan.arguments import train_defaults
from mlbench.results.records import TrainResult
from mlbench.training import optimizers
from mlbench.training.callbacks import RunInfo
from conftest import vector_source

MLP = dict(model="mlp", global_batch_size=32, train_steps=10, verbose=False,
           precision="float32", model_options={"input_dim": 16, "hidden": (8,)})
# a zoo model without optimizer arguments: SGD with momentum 0.9, constant, at its recipe
MLP_OPTIMIZER = {"name": "sgd", "learning_rate": 0.0125,  # the recipe: 0.1 × 32 / 256
                 "schedule": "constant",
                 "decay_steps": None, "end_learning_rate": 0.0001, "power": 1.0,
                 "warmup_steps": 0, "momentum": 0.9, "weight_decay": 0.0, "beta_1": 0.9,
                 "beta_2": 0.999, "epsilon": 1e-06,
                 "exclude_from_weight_decay": ("batch_normalization", "bias", "LayerNorm",
                                               "layer_norm")}


@pytest.fixture(scope="module")
def plan():
    return plan_lib.resolve(plan_lib.train_arguments(
        dict(MLP, data=vector_source(), target={"top1": 0.9}, eval_every=5), train_defaults()))


def stored(steps, status="finished", reached_target=False, final_metrics=None,
           planned_steps=None):
    """A stored result.json's record with what `finished` reads."""
    return TrainResult(model=None, final_metrics=final_metrics or {},
                       reached_target=reached_target, time_to_quality_s=None, steps=steps,
                       examples_per_second=None, history=[], arguments={}, ran={},
                       model_dir=None, status=status, planned_steps=planned_steps)


@pytest.mark.parametrize("record,finished", [
    (stored(10), True),                                   # every step asked for
    (stored(12), True),                                   # more than asked for now
    (stored(5), False),                                   # more steps asked for now
    (stored(10, "interrupted"), False),                   # stopped early: resume it
    (stored(5, reached_target=True, final_metrics={"top1": 0.95}), True),
    (stored(5, reached_target=True, final_metrics={"top1": 0.85}), False),
    (stored(4, "stopped", planned_steps=10), True),       # a callback stopped it, same length
    (stored(4, "stopped", planned_steps=8), False),       # a longer run is asked for now
])
def test_a_stored_run_is_finished_when_it_ran_every_step_or_met_todays_target(
        plan, record, finished):
    assert runner.finished(record, plan) is finished


def test_a_higher_target_reopens_a_run_that_met_the_old_one(plan):
    stored_run = stored(5, reached_target=True, final_metrics={"top1": 0.92})
    higher = dataclasses.replace(plan, cadence=dataclasses.replace(plan.cadence,
                                                                   target={"top1": 0.93}))
    assert runner.finished(stored_run, plan) and not runner.finished(stored_run, higher)


def test_callbacks_are_told_the_plans_figures(plan):
    info = runner.configured_info(plan)
    assert info == RunInfo(global_batch_size=32, gradient_accumulation_steps=1, train_steps=10,
                           eval_every=5, epoch_steps=0,
                           num_train_examples=192, num_eval_examples=64, seed=0,
                           optimizer=optimizers.OptimizerHparams(**MLP_OPTIMIZER), model="mlp",
                           target={"top1": 0.9}, label_smoothing=0.0)


def test_hparams_reach_tensorboard(plan, tmp_path):
    runner.write_hparams(str(tmp_path), plan)
    (events,) = tf.io.gfile.glob(str(tmp_path / "events.out.tfevents.*"))  # the run's root
    plugins = {value.metadata.plugin_data.plugin_name
               for event in tf.compat.v1.train.summary_iterator(events)
               for value in event.summary.value}
    assert plugins == {"hparams"}
    runner.write_hparams(None, plan)  # no model_dir: nothing to write, no error


def test_only_the_chief_writes_the_model_dir(tmp_path, monkeypatch):
    chief = tmp_path / "chief"
    assert runner.writable_model_dir(str(chief)) == str(chief) and chief.is_dir()
    assert runner.writable_model_dir(None) is None
    monkeypatch.setenv("TF_CONFIG", json.dumps({
        "cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"]},
        "task": {"type": "worker", "index": 1}}))
    other = runner.writable_model_dir(str(tmp_path / "worker1"))
    assert not (tmp_path / "worker1").exists() and os.path.basename(other).startswith(
        "mlbench_worker_")


def test_a_stored_result_is_used_only_for_the_checkpoint_it_belongs_to(plan, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "result.json").write_text(json.dumps(stored(10).summary()))
    at = dataclasses.replace(plan, directory=dataclasses.replace(plan.directory,
                                                                 model_dir=str(run)))

    class Parts:
        resumed_from, resumed_from_step = "ckpt-10", 10
    assert runner.stored_result(at, Parts).steps == 10
    Parts.resumed_from_step = 8  # result.json of a later step than the checkpoint
    assert runner.stored_result(at, Parts) is None
    Parts.resumed_from = None  # a fresh start reads nothing
    assert runner.stored_result(at, Parts) is None


def test_summary_line():
    result = TrainResult(model=None, optimizer=None, final_metrics={"top1": 0.912345},
                         reached_target=True, time_to_quality_s=12.34, steps=40,
                         examples_per_second=1234.56, history=[], arguments={}, model_dir=None,
                         ran={"precision": "float32", "optimizer": {"lr": 1}})
    assert runner.format_summary(result) == (
        "RESULT reached_target=True time_to_quality=12.3s steps=40 examples/sec=1234.6 "
        "metrics={'top1': 0.9123} ran={'precision': 'float32'}")


def test_a_run_that_fails_while_building_closes_its_progress_bar(plan, monkeypatch):
    bars = []

    class RecordedProgress(runner.Progress):
        def __init__(self, *args):
            super().__init__(*args, bar=True)
            bars.append(self.bar)

    def build_fails(*args, **kwargs):
        raise RuntimeError("no model today")

    monkeypatch.setattr(runner, "Progress", RecordedProgress)
    monkeypatch.setattr(runner, "build", build_fails)
    with pytest.raises(RuntimeError, match="no model today"):
        runner.run(dataclasses.replace(plan, verbose=True))
    assert len(bars) == 1 and bars[0].disable  # tqdm's close() sets disable


@pytest.mark.parametrize("error", [tf.errors.UnavailableError, tf.errors.DeadlineExceededError])
def test_a_ps_lost_while_the_model_is_built_is_named(plan, monkeypatch, error):
    # The real kill (tests/distribute/test_parameter_server.py) lands in this window only
    # under load; here the building step itself reports the lost ps, every time.
    def build_on_a_lost_ps(*args, **kwargs):
        raise error(None, None, "RandomUniform: /job:ps/replica:0/task:1/device:CPU:0 is gone")

    monkeypatch.setattr(runner, "build", build_on_a_lost_ps)
    monkeypatch.setattr(runner.strategies, "is_parameter_server", lambda strategy: True)
    with pytest.raises(runner.ParameterServerLostError, match=r"ps 1 stopped answering"):
        runner.run(plan)


def test_an_unavailable_device_of_a_single_process_run_is_not_called_a_lost_peer(
        plan, monkeypatch):
    def build_unavailable(*args, **kwargs):
        raise tf.errors.UnavailableError(None, None, "device busy")

    monkeypatch.setattr(runner, "build", build_unavailable)
    with pytest.raises(tf.errors.UnavailableError, match="device busy"):
        runner.run(plan)
