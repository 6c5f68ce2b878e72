"""`compare` on train runs (steps to target, time to quality) and the environment check."""
import json

import pytest

import mlbench
from mlbench.reporting import compare_runs
from mlbench.results import records


def _train(model_dir, learning_rate):
    return mlbench.train(model="simple_cnn", data="digits", global_batch_size=32,
                         train_steps=200, eval_every=10, steps_per_loop=10,
                         target={"top1": 0.7}, learning_rate=learning_rate,
                         model_options={"image_size": 8}, precision="float32", verbose=False,
                         warmup=True,  # compile before the clock: the times compare steps
                         model_dir=str(model_dir))


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("lr")
    return _train(root / "fast", 0.05), _train(root / "slow", 0.0001)


def test_two_train_runs_of_different_learning_rates_get_a_verdict(two_runs):
    fast, slow = two_runs
    assert fast.reached_target and slow.reached_target
    result = mlbench.compare(fast.model_dir, slow.model_dir)
    rows = {r.quantity: r for r in result.rows}
    steps = rows["steps to target"]
    first_met = [h["step"] for h in slow.history if h.get("metrics", {}).get("top1", 0) >= 0.7]
    assert steps.candidate == first_met[0] and steps.candidate > steps.baseline
    assert steps.verdict == "more steps"
    ttq = rows["time to quality (s)"]
    assert (ttq.baseline, ttq.candidate) == (fast.time_to_quality_s, slow.time_to_quality_s)
    assert ttq.verdict == "slower"  # several times the steps: far beyond the ±5 % band
    assert result.environment == []  # one process: one machine, one stack
    assert "steps to target" in result.table() and "WARNING" not in result.table()
    strict = mlbench.compare(fast.model_dir, slow.model_dir, fail_on_regression="5%")
    assert strict.regressed


def test_a_side_from_another_machine_is_flagged(two_runs, tmp_path):
    fast, slow = two_runs
    stored = json.loads(open(f"{slow.model_dir}/result.json").read())
    assert stored["environment"]["tensorflow"].startswith("2.20")
    stored["environment"]["cpu"] = "Another CPU"
    (tmp_path / "result.json").write_text(json.dumps(stored))
    result = mlbench.compare(fast.model_dir, str(tmp_path))
    assert len(result.environment) == 1 and result.environment[0].startswith(
        "different machines (cpu: ")
    assert "WARNING: different machines" in result.table()


def test_environment_differences_name_machines_and_stacks():
    a = {"cpu": "x", "cpu_cores": 2, "tensorflow": "2.20.0", "accelerator": "none"}
    assert compare_runs.environment_differences(a, dict(a)) == []
    notes = compare_runs.environment_differences(a, dict(a, tensorflow="2.21.0", cpu_cores=8))
    assert [n.split(" (")[0] for n in notes] == ["different machines", "different stack"]
    assert compare_runs.environment_differences({}, a) == []


def test_mlperf_run_sets_are_judged_by_their_runs_spread():
    from mlbench.reporting.sources import Source

    def run_set(minutes, score):
        runs = [records.MLPerfRun(seed=i, reached_target=True, minutes=m, status="success",
                                  metrics={}, log="", checker_passed=True, checker_output="")
                for i, m in enumerate(minutes)]
        return Source("mlperf", "set", "MLPerf", records.MLPerfResults(
            records.MLPerfSettings("resnet"), "closed", runs,
            records.Score(score, len(runs), 5, True, "")))
    base = run_set([10.0, 10.2, 9.8, 10.1, 9.9], 10.0)
    spread = compare_runs.statistics.stdev([10.0, 10.2, 9.8, 10.1, 9.9]) / 10.0
    band = 2 * (2 * spread ** 2) ** 0.5  # both sides have the same spread
    inside = compare_runs.compare_mlperf(base, run_set([10.0, 10.2, 9.8, 10.1, 9.9],
                                                       10.0 * (1 + 0.9 * band)))
    beyond = compare_runs.compare_mlperf(base, run_set([10.0, 10.2, 9.8, 10.1, 9.9],
                                                       10.0 * (1 + 1.1 * band)), 0.01)
    assert inside.rows[0].verdict == "within noise" and not inside.regressed
    assert beyond.rows[0].verdict == "slower" and beyond.regressed


def test_examples_per_second_is_judged_by_the_runs_own_block_spread():
    """Two runs 8 % apart whose blocks vary by ±10 % are within noise; the same gap with
    steady blocks is a verdict; a run without timed blocks is not judged."""
    def run(rate, wobble):
        blocks = [rate * (1 + wobble * (-1) ** i) for i in range(6)]
        return train_record(rate, [{"step": i, "block_examples_per_second": b}
                                   for i, b in enumerate(blocks)])
    noisy = compare_runs._judged_rate(run(1000, 0.10), run(920, 0.10), threshold=0.05)
    assert noisy.verdict == "within noise" and not noisy.regression
    steady = compare_runs._judged_rate(run(1000, 0.005), run(920, 0.005), threshold=0.05)
    assert steady.verdict == "slower" and steady.regression
    bare = compare_runs._judged_rate(train_record(1000, []), run(920, 0.005), threshold=0.05)
    assert bare.verdict.startswith("not judged") and not bare.regression


def train_record(examples_per_second, history):
    """A stored train result holding only what the examples/sec verdict reads."""
    return records.TrainResult(model=None, final_metrics={}, reached_target=False,
                               time_to_quality_s=None, steps=len(history),
                               examples_per_second=examples_per_second, history=history,
                               arguments={}, ran={}, model_dir=None)


def _sweep(folder, rows, precision="float32"):
    from mlbench.results import files
    result = records.InferenceResult("resnet50", precision, False, "/cpu:0", "synthetic",
                                     [records.LatencyStats(b, n, 10, eps, n * b / eps, p50,
                                                           p50, p90, p90, p99, p99)
                                      for b, n, eps, p50, p90, p99 in rows])
    files.write(str(folder), result)
    return str(folder)


def test_two_inference_sweeps_are_judged_per_batch_by_their_own_spread(tmp_path):
    """Golden values: batch 1 has 100 batches, p50 10 ms, p90 11 ms (spread 0.1 / √100
    = 1 %, so the band is the 5 % floor); batch 32 has 4 batches, p50 100 ms, p90 160 ms
    (60 % / √4 = 30 % a side: band 2·√2·30 % ≈ 85 %)."""
    base = _sweep(tmp_path / "base", [(1, 100, 100.0, 10.0, 11.0, 12.0),
                                      (32, 4, 320.0, 100.0, 160.0, 170.0)])
    cand = _sweep(tmp_path / "cand", [(1, 100, 83.0, 12.0, 13.2, 14.0),
                                      (32, 4, 200.0, 150.0, 240.0, 250.0),
                                      (64, 4, 300.0, 210.0, 220.0, 230.0)])
    result = mlbench.compare(base, cand, fail_on_regression="10%")
    rows = {r.quantity: r for r in result.rows}
    assert rows["batch 1 p50 latency (ms)"].verdict == "slower"  # +20 % beyond 5 %
    assert rows["batch 1 examples/sec"].verdict == "slower"
    assert rows["batch 32 p50 latency (ms)"].verdict == "within noise"  # +50 % < 85 %
    assert rows["batch 32 p99 latency (ms)"].verdict == "(shown)"
    assert rows["batch 64 examples/sec"].verdict == "not comparable (missing on a side)"
    assert result.regressed
    same = mlbench.compare(base, _sweep(tmp_path / "same", [
        (1, 100, 99.0, 10.2, 11.2, 12.0), (32, 4, 318.0, 101.0, 161.0, 170.0)]),
        fail_on_regression="10%")
    assert not same.regressed and {r.verdict for r in same.rows} == {"within noise",
                                                                     "(shown)"}
    mixed = mlbench.compare(base, _sweep(tmp_path / "bf16", [(1, 100, 99.0, 10.0, 11.0, 12.0)],
                                         "mixed_bfloat16"))
    assert "different precision (float32 vs mixed_bfloat16)" in mixed.environment
