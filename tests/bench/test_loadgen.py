"""MLPerf Inference scenarios on MLCommons' LoadGen: LoadGen issues and judges, mlbench
answers; what is reported is what LoadGen's own logs say."""
import json
import os
import re

import pytest

from harness import mlbench_here
from mlbench.bench import loadgen


@pytest.fixture(scope="module")
def model():
    return loadgen.model_forward("resnet_tiny", precision="float32", num_classes=10)


def detail(log_dir, key):
    """A value of LoadGen's detail log (its MLLOG lines)."""
    with open(os.path.join(log_dir, "mlperf_log_detail.txt")) as f:
        for line in f:
            event = json.loads(line.split(":::MLLOG", 1)[1])
            if event["key"] == key:
                return event["value"]
    raise KeyError(key)


@pytest.mark.parametrize("scenario,figure", [
    ("SingleStream", "90.0th percentile latency (ns)"),
    ("Offline", "Samples per second"),
    ("MultiStream", "99.0th percentile latency (ns)")])
def test_each_scenario_reports_loadgens_own_verdict_and_figure(model, tmp_path, scenario,
                                                               figure):
    forward, make_samples, _ = model
    result = loadgen.run(forward, make_samples, scenario, str(tmp_path), batch_size=8,
                         min_duration_s=0.5, sample_count=16)
    summary = open(tmp_path / "mlperf_log_summary.txt").read()
    stated = re.search(re.escape(figure) + r"\s*:\s*([\d.]+)", summary).group(1)
    assert result.value == float(stated) and result.figure == figure
    assert result.valid == (detail(str(tmp_path), "result_validity") == "VALID")
    assert result.valid, result.reasons  # the calibrated settings satisfy LoadGen
    # every sample LoadGen issued was answered by the model, once
    per_query = {"MultiStream": 8}.get(scenario, 1)
    if scenario != "Offline":
        assert result.samples_answered == per_query * detail(str(tmp_path),
                                                             "result_query_count")


def test_an_impossible_server_bound_is_invalid_with_loadgens_reasons(model, tmp_path):
    forward, make_samples, _ = model
    result = loadgen.run(forward, make_samples, "Server", str(tmp_path), min_duration_s=0.5,
                         server_target_qps=200, server_latency_ms=0.001, sample_count=16)
    assert not result.valid
    assert any("satisfied" in r and "NO" in r for r in result.reasons)
    assert detail(str(tmp_path), "result_validity") == "INVALID"


def test_the_cli_exits_3_on_invalid_and_refuses_bad_scenarios_before_work(tmp_path):
    logs = tmp_path / "logs"
    done = mlbench_here("infer", "resnet_tiny", "--precision=float32", "--scenario=Server",
                        "--min_duration=0.3", "--server_target_qps=200",
                        "--server_latency_ms=0.001", f"--loadgen_dir={logs}")
    assert done.returncode == 3, done.stderr
    assert "| Server | INVALID |" in done.stdout
    assert (logs / "Server" / "mlperf_log_summary.txt").exists()
    bad = mlbench_here("infer", "resnet_tiny", "--scenario=Streaming",
                       f"--loadgen_dir={tmp_path / 'none'}")
    assert bad.returncode == 2 and "Streaming" in bad.stderr
    server = mlbench_here("infer", "resnet_tiny", "--scenario=Server",
                          f"--loadgen_dir={tmp_path / 'none'}")
    assert server.returncode == 2 and "server_target_qps" in server.stderr
    assert not (tmp_path / "none").exists()
