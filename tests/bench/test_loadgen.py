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
    result = loadgen.run(model.forward, model.make_samples, scenario, str(tmp_path),
                         batch_size=8, min_duration_s=0.5, sample_count=16)
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
    result = loadgen.run(model.forward, model.make_samples, "Server", str(tmp_path),
                         min_duration_s=0.5, server_target_qps=200, server_latency_ms=0.001,
                         sample_count=16)
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
    quick_sweep = mlbench_here("infer", "resnet_tiny", "--quick",
                               f"--output_dir={tmp_path / 'none'}")
    assert quick_sweep.returncode == 2 and "--scenario" in quick_sweep.stderr
    zoo_accuracy = mlbench_here("infer", "resnet_tiny", "--accuracy",
                                f"--loadgen_dir={tmp_path / 'none'}")
    assert zoo_accuracy.returncode == 2 and "model_dir with an eval set" in \
        zoo_accuracy.stderr
    assert not (tmp_path / "none").exists()


def test_settings_are_loadgens_own_mlperf_ones_and_every_departure_is_named():
    """Golden values of LoadGen's built-in mlperf.conf for MLPerf's ResNet-50."""
    import mlperf_loadgen as lg
    settings, departures = loadgen._settings(lg, "Offline", "resnet50", False, None, None,
                                             None, None)
    assert (settings.min_duration_ms, settings.min_query_count) == (600_000, 24_576)
    assert departures == []
    assert loadgen._library_size(settings, None, False, departures) == 1024
    assert departures == [] and settings.performance_sample_count_override == 0
    server, departures = loadgen._settings(lg, "Server", "resnet50", False, None, None, 50,
                                           None)
    assert server.server_target_latency_ns == 15_000_000 and departures == []
    quick, departures = loadgen._settings(lg, "MultiStream", "resnet50", True, None, None,
                                          None, None)
    assert (quick.min_duration_ms, quick.min_query_count) == (1000, 662)
    assert departures == ["--quick", "a minimum duration of 1 s (MLPerf: 600 s)"]
    assert loadgen._library_size(quick, None, True, departures) == 64
    assert departures[-1] == "a sample library of 64 (MLPerf: 1024)"
    _, departures = loadgen._settings(lg, "SingleStream", None, False, None, None, None, None)
    assert len(departures) == 1 and "no MLPerf Inference benchmark" in departures[0]


def test_quick_is_labelled_not_compliant_in_what_loadgen_ran_and_what_is_printed(tmp_path):
    done = mlbench_here("infer", "simple_cnn",
                        "--scenario=Offline", "--quick", f"--loadgen_dir={tmp_path}")
    assert done.returncode == 0, done.stderr
    assert detail(str(tmp_path / "Offline"), "effective_min_duration_ms") == 1000
    assert "| Offline | VALID |" in done.stdout
    assert "not MLPerf-compliant: --quick; a minimum duration of 1 s" in done.stdout


def test_a_model_that_fails_mid_run_ends_loadgen_with_its_error_not_a_hang(model, tmp_path):
    calls = []

    def failing_after_calibration(x):
        calls.append(1)
        if len(calls) > 6:  # the 6 calibration passes succeed
            raise MemoryError("out of memory in the model")
        return model.forward(x)
    with pytest.raises(RuntimeError, match="MemoryError: out of memory in the model"):
        loadgen.run(failing_after_calibration, model.make_samples, "SingleStream",
                    str(tmp_path), min_duration_s=0.5, sample_count=16)


def test_a_model_of_several_inputs_answers_loadgen_one_row_of_each_per_sample(tmp_path):
    """BERT's named inputs: each library sample is one row of every input."""
    served = loadgen.model_forward("bert_tiny", precision="float32")
    library = served.make_samples(16)
    assert isinstance(library, dict) and {int(t.shape[0]) for t in library.values()} == {16}
    result = loadgen.run(served.forward, served.make_samples, "Offline", str(tmp_path),
                         batch_size=4, quick=True)
    assert result.valid, result.reasons
    assert result.samples_answered >= loadgen.QUICK_QUERIES  # Offline's minimum, in samples
    assert "--quick" in result.settings
