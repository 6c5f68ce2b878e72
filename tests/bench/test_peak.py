"""The peak behind MFU: measured once per machine and cached; never an MFU above 100 %."""
import json

import pytest

from mlbench.bench import peak


def test_cpu_peak_is_measured_once_then_read_from_the_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    calls = []
    monkeypatch.setattr(peak, "measure_matmul_flops", lambda policy: calls.append(policy) or 2e11)
    first, how = peak.peak_flops("float32", 2)
    again, _ = peak.peak_flops("float32", 1)
    assert first == again == 2e11 and calls == ["float32"]  # logical devices share the CPU
    assert "measured 200 GFLOP/s" in how and str(tmp_path) in how
    cached = json.load(open(tmp_path / "mlbench" / "peak_flops.json"))
    assert [v["flops"] for v in cached.values()] == [2e11]


def test_matmul_measurement_counts_flops_of_real_matmuls():
    """A small run: the figure is a plausible CPU rate (neither zero nor absurd)."""
    flops = peak.measure_matmul_flops("float32", size=256, min_seconds=0.05)
    assert 1e8 < flops < 1e14


def test_mfu_above_100_percent_is_never_reported():
    assert peak.utilisation(50.0, 100.0, "p") == (0.5, "p")
    mfu, how = peak.utilisation(150.0, 100.0, "p")
    assert mfu is None and "150%" in how and "too low" in how


@pytest.mark.parametrize("gpu", ["H100", "H200", "A100"])
def test_gpu_table_has_tf32_and_half(gpu):
    entry = peak.GPU_PEAK_TFLOPS[gpu]
    assert entry["float32"] < entry["tf32"] < entry["half"]
