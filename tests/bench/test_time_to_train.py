"""Time and cost to train: RCP interpolation as rcp_checker does it, the band, the
arithmetic, and two-point calibration (recovering a known bandwidth; on the page)."""
import json
import os
import subprocess
import sys
import tempfile
import types

import numpy as np
import pytest
from mlperf_logging.rcp_checker import rcp_checker

from mlbench.mlperf import benchmarks, scoring
from mlbench.projector import time_to_train as ttt
from mlbench.projector import calibration
from mlbench.projector import page_suites
from mlbench.projector import platforms
from mlbench.projector.throughput import project_cell
from conftest import REPO
from harness import mlbench_process

RCP_DIR = os.path.dirname(rcp_checker.__file__)


def olympic_mean(epochs):
    return float(np.mean(sorted(epochs)[1:-1]))


def test_interpolation_between_two_rcps_is_rcp_checkers():
    """Batch 2496 (Google's v0.7 ResNet on 8 V100s) lies between the pruned RCPs at 1632
    and 3264: the mean is linear in the batch between their olympic means."""
    with open(os.path.join(RCP_DIR, "training_1.0.0", "rcps_resnet.json")) as f:
        raw = json.load(f)
    low, high = raw["resnet_ref_1632"], raw["resnet_ref_3264"]
    by_hand = np.interp(2496, [1632, 3264], [olympic_mean(low["Epochs to converge"]),
                                             olympic_mean(high["Epochs to converge"])])
    found = ttt.convergence("resnet", 2496)
    assert found.epochs == pytest.approx(by_hand, rel=1e-12)
    assert found.samples == pytest.approx(by_hand * 1_281_167, rel=1e-12)
    assert found.source == "interpolated between RCPs at batch 1632 and 3264"
    assert found.samples_low < found.samples < found.samples_high
    # the band is rcp_checker's acceptance range, symmetric about the mean
    assert found.samples_high - found.samples == pytest.approx(found.samples - found.samples_low)


def test_a_batch_outside_the_rcps_is_refused_naming_their_range():
    with pytest.raises(ValueError, match=r"`global_batch_size` \(1024\) is outside the RCPs "
                                         r"of 1.0.0 \(batch sizes 1632 to 65536"):
        ttt.convergence("resnet", 1024)
    with pytest.raises(ValueError, match="outside the RCPs"):
        ttt.convergence("bert", 100_000)


def test_bert_convergence_is_in_samples():
    found = ttt.convergence("bert", 3072)  # an RCP of its own (448 is pruned)
    with open(os.path.join(RCP_DIR, "training_1.0.0", "rcps_bert.json")) as f:
        raw = json.load(f)["bert_ref_3072"]["Epochs to converge"]
    assert found.epochs is None and found.samples == pytest.approx(olympic_mean(raw))
    assert found.source == "RCP at batch 3072"


def test_minutes_and_dollars_on_a_hand_example():
    """3.6 M samples at 1000 images/sec on 4 devices = 60 min of training; evals every
    epoch of 1.2 M: 3 of them, 10,000 images each at 3000/s = 10 s; at $2 per
    device-hour: 60.1667 / 60 h × 4 × $2 = $8.0222."""
    converge = ttt.Convergence("resnet", 4096, "1.0.0", 3_600_000, 3_240_000, 3_960_000,
                               3.0, "given", "given")
    cadence = benchmarks.EvalCadence(10_000, every_epochs=1)
    found = ttt.estimate(converge, 1000.0, devices=4, eval_images_per_sec=3000.0,
                         price_per_device_hour=2.0, cadence=cadence, train_examples=1_200_000)
    assert found.evals == 3
    assert found.train_minutes == pytest.approx(60.0)
    assert found.eval_minutes == pytest.approx(10 / 60)
    assert found.minutes == pytest.approx(60 + 10 / 60)
    assert found.cost == pytest.approx((60 + 10 / 60) / 60 * 4 * 2.0)
    assert found.minutes_low < found.minutes < found.minutes_high
    assert found.cost_low < found.cost < found.cost_high
    assert found.minutes_low == pytest.approx(54 + 10 / 60)  # 3.24 M samples, still 3 evals
    # without a measured forward rate the stated ratio is used, and said
    stated = ttt.estimate(converge, 1000.0, cadence=cadence, train_examples=1_200_000)
    assert stated.eval_images_per_sec == 3000.0 and "stated" in stated.eval_rate_source


def test_closed_bert_eval_cadence_follows_the_rules_formula():
    cadence = benchmarks.get("bert").closed_eval
    assert cadence.every_samples(448, None) == pytest.approx(0.05 * (230.23 * 448 + 3e6))
    assert cadence.every_samples(200_000, None) == pytest.approx(0.05 * (230.23 * 200_000 + 3e6))
    assert cadence.every_samples(3_000_000, None) == 25_000_000  # the cap
    assert benchmarks.get("resnet").closed_eval.every_samples(2496, 1_281_167) == 4 * 1_281_167


def test_two_point_calibration_recovers_a_known_bandwidth():
    """2-device figures made with the DGX-1 record's links at 0.3x: the fit finds 0.3."""
    record = platforms.get("dgx1_p100")
    truth = calibration.scaled(record, 0.3)
    gradient_bytes, one = 4 * 138_357_544, 150.0  # VGG16's gradients: communication shows
    two = project_cell(one, 32, 2, "replicated", gradient_bytes, truth).images_per_sec
    assert two < 2 * one * 0.95  # the links limit: a real fit, not the no-loss bound
    fitted = calibration.fit(one, two, 32, "replicated", gradient_bytes, "dgx1_p100", "vgg16")
    assert fitted.bound == "fitted"
    assert fitted.scale == pytest.approx(0.3, rel=1e-6)
    assert fitted.effective_bandwidth == pytest.approx(0.3 * 20e9, rel=1e-6)
    eight = fitted.project([8], "bandwidth")[0].images_per_sec
    assert eight == pytest.approx(project_cell(one, 32, 8, "replicated", gradient_bytes,
                                               truth).images_per_sec, rel=1e-6)


def test_two_point_calibration_on_the_page_beats_linear_and_one_point():
    """Each page platform fitted per model on its 1- and 2-GPU rows (30 cells at 4 and 8
    GPUs): docs/projection.md gives the figures."""
    figures = calibration.validate_page(page_suites.page_suite)
    derate, one_point = figures["derate"], figures["one_point"]
    assert derate["cells"] == one_point["cells"] == 30
    assert derate["projection"]["mape"] < one_point["projection"]["mape"]
    assert derate["projection"]["mape"] < derate["linear"]["mape"]
    assert abs(derate["worst"]["error_pct"]) < abs(one_point["worst"]["error_pct"])


def test_project_command_to_quality_and_calibrated(tmp_path):
    from mlbench.results import files as result_files
    from mlbench.results.records import BenchmarkResult, Stats

    def result(devices, rate):  # a benchmark's result.json, as `benchmark` writes it
        return result_files.write(str(tmp_path / f"r{devices}"), BenchmarkResult(
            model="resnet50", batch_size=256, num_devices=devices, data="synthetic",
            variable_update="replicated", runs=[], images_per_sec=Stats(rate, 0, rate, rate, 1),
            compile_s=0.0, ran={"strategy": "MirroredStrategy"}))
    out = mlbench_process("project", f"--calibrate={result(1, 1270)},{result(2, 2413)}",
                          "--devices=8,16", "--platform=dgx1_v100", "--to_quality",
                          "--price_per_device_hour=3", f"--json={tmp_path / 'out.json'}")
    assert out.returncode == 0, out.stderr[-2000:]
    saved = json.loads((tmp_path / "out.json").read_text())
    derate = 2413 / (2 * 1270)  # the datasheet's 2-GPU projection is linear for ResNet-50
    assert saved["calibration"]["derate"] == pytest.approx(derate, rel=1e-3)
    at8 = next(t for t in saved["time_to_train"] if t["devices"] == 8)
    assert at8["images_per_sec"] == pytest.approx(8 * 1270 * derate, rel=1e-3)
    assert at8["convergence"]["global_batch_size"] == 2048
    hours = at8["minutes"] / 60
    assert at8["cost"] == pytest.approx(hours * 8 * 3)
    assert "time to train resnet at global batch 2048 on 8 device(s)" in out.stdout
    assert any("1 device(s)" in n for n in saved["not_estimated"])  # batch 256: no RCP


def test_results_page_has_a_time_to_train_table_beside_the_projection():
    """The producer (`projector.attach`) stores the minutes beside the projection; the
    report reads them from the result as written, without the projector."""
    from mlbench.projector import attach
    from mlbench.reporting import content
    from mlbench.results import files as result_files
    from mlbench.results.records import BenchmarkResult, Stats
    measured = BenchmarkResult(model="resnet50", data="synthetic", num_devices=1,
                               batch_size=256, variable_update="replicated", runs=[],
                               images_per_sec=Stats(1270.0, 0.0, 1270.0, 1270.0, 1),
                               compile_s=0.0, ran={})
    result, projected = attach.attach(measured, 8, "dgx1_v100")
    folder = tempfile.mkdtemp(prefix="mlbench_ttt_")
    written = result_files.read(result_files.write(folder, result))[2]  # as a report reads it
    sections = content.projections("s0", [written])
    table = next(s for s in sections if s.id == "s0-time-to-train")
    expected = ttt.estimate(ttt.convergence("resnet", 2048), projected.cells[-1].images_per_sec,
                            devices=8)
    (row,) = table.rows  # 2 and 4 devices (batch 512, 1024) are below the RCPs
    assert row[1] == "8" and row[2] == "2048"
    assert row[3]["value"] == pytest.approx(expected.minutes)
    assert "projected, not measured" in table.title and "No estimate for" in table.note


CPU_FIGURES = os.path.join(REPO, "tests", "fixtures", "cpu_time_to_train.json")


def test_cpu_scale_prediction_arithmetic_on_stored_runs():
    """benchmarks/time_to_train_cpu.py measured the rates and ran 5 CPU-scale MLPerf ResNet
    runs on a 2-core AVX2 machine (figures in docs/projection.md): the prediction
    from the stored rates is the stored one, and the runs' olympic mean lies in its band
    and within 15 % of its point."""
    import benchmarks.time_to_train_cpu as script
    with open(CPU_FIGURES) as f:
        stored = json.load(f)
    again = script.predicted(
        types.SimpleNamespace(images_per_sec=types.SimpleNamespace(
            mean=stored["train_images_per_sec"])),
        {"model": "resnet_tiny", "images_per_sec": {"mean": stored["forward_images_per_sec"]},
         "batch_size": 128, "num_devices": 1, "ran": {}})
    for key, value in stored["predicted"].items():
        assert getattr(again, key) == pytest.approx(value, rel=1e-9)
    # the runs' score, recomputed by MLCommons' summarizer from their minutes, lies in the
    # band and near the point recomputed above (both fail if either computation changes)
    measured = scoring.score("resnet", stored["measured_minutes"]).minutes
    assert measured == pytest.approx(stored["measured_olympic_mean"], rel=1e-12)
    assert again.minutes_low <= measured <= again.minutes_high
    assert abs(measured / again.minutes - 1) <= 0.15


@pytest.mark.slow
def test_cpu_scale_prediction_gate_measured_now(tmp_path):
    """The gate measured on this machine now: 5 runs (about 4 minutes)."""
    out = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks", "time_to_train_cpu.py"),
                          "5", f"--save={tmp_path / 'figures.json'}"], cwd=REPO,
                         capture_output=True, text=True, timeout=3600)
    assert out.returncode == 0, out.stderr[-2000:]
    figures = json.loads((tmp_path / "figures.json").read_text())
    predicted, measured = figures["predicted"], figures["measured_olympic_mean"]
    assert predicted["minutes_low"] <= measured <= predicted["minutes_high"]
    assert abs(measured / predicted["minutes"] - 1) <= 0.15
