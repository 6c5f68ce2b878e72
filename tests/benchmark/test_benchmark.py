"""Benchmark mode: the method's statistics, warm-up exclusion, strategies, real data, reports."""
import json

import matplotlib.image
import pytest
import tensorflow as tf

import mlbench
from mlbench import distribute
from mlbench.benchmark import runner, stats, suite


def test_statistics_match_hand_computation():
    run = stats.run_stats([0.5, 0.25, 1.0], images_per_step=10)
    # rates 20, 40, 10 images/sec
    assert run.images_per_sec_mean == pytest.approx(70 / 3)
    assert run.images_per_sec_stderr == pytest.approx(15.275252 / 3 ** 0.5, rel=1e-6)
    assert run.jitter == pytest.approx(1.4826 * 10)  # median 20, |dev| = 0, 20, 10
    assert run.total_images_per_sec == pytest.approx(30 / 1.75)
    across = stats.across_runs([10.0, 12.0, 14.0])
    assert across == {"mean": 12.0, "std": 2.0, "min": 10.0, "max": 14.0, "runs": 3}


class ScriptedStep:
    """A step whose durations come from a script, on a fake clock."""

    def __init__(self, durations):
        self.now, self.durations, self.calls = 0.0, list(durations), 0

    def clock(self):
        return self.now

    def train_loop(self, inputs, num_steps):
        self.now += self.durations.pop(0)
        self.calls += 1
        return tf.constant(0.0), tf.constant(0, tf.int64)


def test_warmup_never_enters_the_statistics():
    warmup, timed = [100.0, 100.0, 100.0], [0.5, 0.25, 1.0, 0.5]
    step = ScriptedStep(warmup + timed)
    run, warmup_s = runner.run_once(step, None, num_warmup=3, num_batches=4, images_per_step=10,
                                    clock=step.clock, log=lambda _: None, log_every=3)
    assert step.calls == 7 and run.num_steps == 4
    assert run.step_times == timed
    assert warmup_s == 300.0
    assert run.total_images_per_sec == pytest.approx(40 / 2.25)


def test_real_benchmark_counts_steps_and_runs(tmp_path):
    result = mlbench.benchmark("resnet_tiny", batch_size=8, num_devices=2, num_warmup_batches=2,
                               num_batches=3, num_runs=2, verbose=False)
    assert [r.num_steps for r in result.runs] == [3, 3]
    assert result.ran["steps_run"] == 1 + 2 * (2 + 3)  # compile step + (warm-up + timed) × runs
    assert result.ran["replicas"] == 2 and result.ran["strategy"] == "MirroredStrategy"
    assert result.images_per_sec["runs"] == 2 and result.images_per_sec["mean"] > 0
    assert result.ran["precision"] in ("float32", "mixed_bfloat16")
    assert result.ran["jit_compile"] is False  # 'auto' on CPU
    assert 0 < result.mfu < 1


@pytest.mark.parametrize("update,device,expected", [
    ("parameter_server", "cpu", "CentralStorageStrategy"),
    ("replicated", "gpu", "MirroredStrategy"),
])
def test_variable_update_maps_to_strategy(update, device, expected):
    strategy = distribute.from_variable_update(update, 2, device)
    assert type(strategy).__name__ == expected and strategy.num_replicas_in_sync == 2


def test_replicated_all_reduce_choices():
    for spec, cls in (("hierarchical_copy", "HierarchicalCopyAllReduce"),
                      ("reduction_to_one_device", "ReductionToOneDevice")):
        strategy = distribute.from_variable_update("replicated", 2, all_reduce=spec)
        assert type(strategy.extended._cross_device_ops).__name__ == cls


def test_real_data_mode_reads_imagenet_records(digit_records):
    result = mlbench.benchmark("resnet_tiny", batch_size=16, data="real", data_dir=digit_records,
                               num_classes=10, num_warmup_batches=1, num_batches=3, num_runs=1,
                               verbose=False)
    assert result.data == "real" and result.runs[0].num_steps == 3


def test_suite_report_renders(tmp_path):
    from mlbench import config as gin_config
    gin_config.parse(["benchmarks/cpu_tiny.gin"],
                     ["benchmark_suite.num_batches = 2", "benchmark_suite.num_runs = 1",
                      "benchmark_suite.num_warmup_batches = 1",
                      "benchmark_suite.device_counts = [1, 2, 4]"])
    results, paths = suite.run_suite(output_dir=str(tmp_path), verbose=False)
    assert sorted((r.model, r.num_devices) for r in results) == [
        ("alexnet_tiny", 1), ("alexnet_tiny", 2), ("resnet_tiny", 1), ("resnet_tiny", 2)]
    text = open(paths["markdown"]).read()
    assert "| devices | resnet_tiny | alexnet_tiny |" in text
    assert "| 4 | N/A | N/A |" in text and "Not run: 4 devices (2 visible)" in text
    saved = json.load(open(paths["json"]))
    assert len(saved["results"]) == 4 and saved["results"][0]["runs"][0]["num_steps"] == 2
    assert matplotlib.image.imread(paths["png"]).shape[2] in (3, 4)


@pytest.mark.parametrize("kwargs,needle", [
    (dict(model="resnet_tiny", num_devices=3), "`num_gpus` (3)"),
    (dict(model="resnet5O"), "'resnet5O'"),
    (dict(model="resnet_tiny", variable_update="ring"), "`variable_update` ('ring')"),
    (dict(model="resnet_tiny", data="real"), "needs `data_dir`"),
    (dict(model="resnet_tiny", num_batches=0), "`num_batches` (0)"),
])
def test_bad_benchmark_input_is_refused_before_building(monkeypatch, kwargs, needle):
    def fail(*args, **kw):
        raise AssertionError("a model was built before validation")
    monkeypatch.setattr(runner, "build_step", fail)
    with pytest.raises(ValueError) as err:
        mlbench.benchmark(**kwargs)
    assert needle in str(err.value)
