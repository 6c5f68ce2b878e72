"""Benchmark mode: the method's statistics, warm-up exclusion, strategies, real data, reports."""
import json

import matplotlib.image
import pytest
import tensorflow as tf

import mlbench
from mlbench.bench import bench, stats, suite
from mlbench.distribute import variable_update as vu
from mlbench.bench.timing import StepTimer
from harness import ScriptedClock


def test_statistics_match_tf_cnn_benchmarks_get_perf_timing():
    """Pinned against hand computation of benchmark_cnn.get_perf_timing's formulas."""
    run = stats.run_stats([0.5, 0.25, 1.0, 0.5], global_batch_size=10)
    # times mean 0.5625 s -> 10 / 0.5625 images/sec (not the mean of the rates, 22.5)
    assert run.images_per_sec_mean == pytest.approx(17.777777777777779)
    # rates 20, 40, 10, 20: mean 22.5, squared deviations 6.25 + 306.25 + 156.25 + 6.25 = 475,
    # np.std (ddof 0) = sqrt(475 / 4) = 10.897247358851684
    assert run.images_per_sec_stderr == pytest.approx(10.897247358851684 / 2.0)
    # median 20, |rate - 20| = 0, 20, 10, 0 -> median 5
    assert run.jitter == pytest.approx(1.4826 * 5.0)
    assert run.total_images_per_sec == pytest.approx(40 / 2.25)
    across = stats.across_runs([10.0, 12.0, 14.0])
    assert across == stats.Stats(mean=12.0, std=2.0, min=10.0, max=14.0, runs=3)


def test_warmup_never_enters_the_statistics():
    warmup, timed = [100.0, 100.0, 100.0], [0.5, 0.25, 1.0, 0.5]
    clock = ScriptedClock(warmup + timed)
    timer = StepTimer(num_warmup=3, global_batch_size=10, clock=clock)
    for i in range(7):  # the loop's events for 7 one-step blocks
        timer.on_block_start(i, 1)
        clock.step()
        timer.on_block_stop(i + 1)
    run = timer.run_stats()
    assert run.num_steps == 4 and run.step_times == timed
    assert timer.durations[:3] == warmup  # timed, and kept out of the statistics
    assert run.total_images_per_sec == pytest.approx(40 / 2.25)


def test_real_benchmark_counts_steps_and_runs(tmp_path):
    result = mlbench.benchmark("resnet_tiny", batch_size=8, num_devices=2, num_warmup_batches=2,
                               num_batches=3, num_runs=2, verbose=False)
    assert [r.num_steps for r in result.runs] == [3, 3]
    assert result.ran["steps_run"] == 1 + 2 * (2 + 3)  # compile step + (warm-up + timed) × runs
    assert result.ran["replicas"] == 2 and result.ran["strategy"] == "MirroredStrategy"
    assert result.images_per_sec.runs == 2 and result.images_per_sec.mean > 0
    assert result.ran["jit_compile"] is False  # 'auto' on CPU
    # MFU = model FLOPs per example × examples/sec ÷ the peak of the devices used
    assert result.mfu == pytest.approx(
        result.flops_per_example * result.images_per_sec.mean / result.peak_flops)


@pytest.mark.parametrize("update,device,expected", [
    ("parameter_server", "cpu", "CentralStorageStrategy"),
    ("replicated", "gpu", "MirroredStrategy"),
])
def test_variable_update_maps_to_strategy(update, device, expected):
    strategy = vu.strategy_for(update, 2, device)
    assert type(strategy).__name__ == expected and strategy.num_replicas_in_sync == 2


def test_replicated_all_reduce_choices():
    for spec, cls in (("hierarchical_copy", "HierarchicalCopyAllReduce"),
                      ("reduction_to_one_device", "ReductionToOneDevice")):
        strategy = vu.strategy_for("replicated", 2, all_reduce=spec)
        assert type(strategy.extended._cross_device_ops).__name__ == cls


def test_real_data_mode_reads_imagenet_records(digit_records):
    result = mlbench.benchmark("resnet_tiny", batch_size=16, data="real", data_dir=digit_records,
                               num_classes=10, num_warmup_batches=1, num_batches=3, num_runs=1,
                               verbose=False)
    assert result.data == "real" and result.runs[0].num_steps == 3


def test_suite_report_renders(tmp_path):
    results, paths = suite.run_named(
        "cpu_tiny", ["benchmark_suite.num_batches = 2", "benchmark_suite.num_runs = 1",
                     "benchmark_suite.num_warmup_batches = 1",
                     "benchmark_suite.device_counts = [1, 2, 4]"],
        output_dir=str(tmp_path), project=8, project_platform="dgx_h100", verbose=False)
    assert sorted((r.model, r.num_devices) for r in results) == [
        ("alexnet_tiny", 1), ("alexnet_tiny", 2), ("resnet_tiny", 1), ("resnet_tiny", 2)]
    text = open(paths["markdown"]).read()
    assert "| devices | resnet_tiny | alexnet_tiny |" in text
    assert "| 4 | N/A | N/A |" in text and "Not run: 4 devices (2 visible)" in text
    saved = json.load(open(paths["json"]))
    assert len(saved["results"]) == 4 and saved["results"][0]["runs"][0]["num_steps"] == 2
    assert matplotlib.image.imread(paths["png"]).shape[2] in (3, 4)
    # the 1-device row projected to 2, 4, 8 H100s' interconnect; measured rows stay unprojected
    projected = [r for r in saved["results"] if r["projection"]]
    assert sorted(r["model"] for r in projected) == ["alexnet_tiny", "resnet_tiny"]
    assert all(r["num_devices"] == 1 for r in projected)
    assert "## Projected, not measured (dgx_h100)" in text
    assert text.count("| resnet_tiny | synthetic |") == 3
    # the same suite again into the same folder: refused before any benchmark, files kept
    before = {name: open(path, "rb").read() for name, path in paths.items()}
    with pytest.raises(ValueError, match="already holds report.md, results.json, chart.png "
                                         "of an earlier run"):
        suite.run_named("cpu_tiny", output_dir=str(tmp_path), verbose=False)
    assert {name: open(path, "rb").read() for name, path in paths.items()} == before


@pytest.mark.parametrize("kwargs,needle", [
    (dict(model="resnet_tiny", num_devices=3), "`num_devices` (3)"),
    (dict(model="resnet_tiny", data="imagenette"), "`data` ('imagenette')"),
    (dict(model="resnet5O"), "'resnet5O'"),
    (dict(model="resnet_tiny", variable_update="ring"), "`variable_update` ('ring')"),
    (dict(model="resnet_tiny", data="real"), "needs `data_dir`"),
    (dict(model="resnet_tiny", num_batches=0), "`num_batches` (0)"),
])
def test_bad_benchmark_input_is_refused_before_building(monkeypatch, kwargs, needle):
    def fail(*args, **kw):
        raise AssertionError("a model was built before validation")
    monkeypatch.setattr(bench, "build", fail)
    with pytest.raises(ValueError) as err:
        mlbench.benchmark(**kwargs)
    assert needle in str(err.value)


def test_forward_only_is_a_mode_of_the_same_step():
    result = mlbench.benchmark("resnet_tiny", batch_size=8, forward_only=True,
                               num_warmup_batches=1, num_batches=2, num_runs=1, verbose=False)
    assert result.ran["forward_only"] is True
    assert result.ran["steps_run"] == 1 + 1 + 2
    assert result.runs[0].num_steps == 2


def test_xla_refusal_in_benchmark_mode_falls_back_and_is_recorded(monkeypatch):
    """The benchmark enters compiled code only through TrainStep.run, so its fallback holds."""
    from conftest import host_op_model
    host_op_model(monkeypatch, image=True)
    result = mlbench.benchmark("host_cnn", batch_size=4, jit_compile=True, num_classes=10,
                               num_warmup_batches=1, num_batches=2, num_runs=1, verbose=False)
    assert result.ran["jit_compile"] is False
    assert result.runs[0].num_steps == 2


def test_benchmark_takes_train_data_names():
    result = mlbench.benchmark("simple_cnn", data="mnist", batch_size=16, num_warmup_batches=1,
                               num_batches=2, num_runs=1, precision="float32", verbose=False)
    assert result.data == "mnist" and result.ran["steps_run"] == 1 + 3
    assert result.images_per_sec.mean > 0


def test_a_data_source_that_does_not_fit_is_named_briefly(vectors):
    with pytest.raises(ValueError) as err:
        mlbench.benchmark("resnet_tiny", data=vectors, num_batches=1, num_runs=1)
    message = str(err.value)
    assert "`data` ('vectors', vector examples of shape (16,))" in message
    assert "does not fit `model` ('resnet_tiny')" in message and len(message) < 500


def test_forward_only_computes_every_output_of_a_model_of_several():
    """A BERT pretrainer's outputs (sorted keys) begin with its first encoder layer's: a
    forward step returning that alone let TensorFlow prune the other layers (BERT-base's
    forward_only was 12.6x infer's throughput). The step's value is the sum of every
    output's mean, so each must be computed: equal to the model called directly."""
    from mlbench.bench.resolve import resolve_benchmark
    from mlbench.plan.arguments import BenchmarkArguments
    from mlbench.plan.parts import build
    plan, _ = resolve_benchmark(BenchmarkArguments(model="bert_tiny", batch_size=2,
                                                   forward_only=True, precision="float32"))
    parts = build(plan)
    batch = parts.train_inputs  # synthetic: per-replica values on the one device
    local = tf.nest.map_structure(
        lambda v: parts.step.strategy.experimental_local_results(v)[0], batch)
    outputs = tf.nest.flatten(parts.model(parts.step.task.inputs(local), training=False))
    assert len(outputs) > 2  # encoder layers, masked-LM logits, next sentence, pooled, ...
    expected = sum(float(tf.reduce_mean(tf.cast(t, tf.float32))) for t in outputs)
    value = parts.step.strategy.run(parts.step._replica_step, args=(batch,))
    assert float(value) == pytest.approx(expected, rel=1e-5, abs=1e-6)
