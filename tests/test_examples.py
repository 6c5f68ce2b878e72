"""Every example under examples/ runs (tiny settings), as a notebook user would copy it,
and prints the results it promises: each example's figures are read back and checked."""
import ast
import os
import re
import statistics
import subprocess
import sys

import pytest

from conftest import REPO

EXAMPLES = sorted(f for f in os.listdir(os.path.join(REPO, "examples")) if f.endswith(".py"))


def _dict_after(line, prefix=""):
    """The Python dict literal printed at the start of `line` (after `prefix`)."""
    text = line[len(prefix):].strip()
    depth = 0
    for i, ch in enumerate(text):
        depth += ch == "{"
        depth -= ch == "}"
        if depth == 0:
            return ast.literal_eval(text[:i + 1])
    raise AssertionError(f"no dict in {line!r}")


def check_benchmark_like_the_page(lines, _):
    runs = [re.search(r"images/sec: ([\d.]+) \+/- .* total images/sec: ([\d.]+)", line)
            for line in lines if "total images/sec" in line]
    assert len(runs) == 2  # num_runs=2
    totals = [float(m.group(2)) for m in runs]
    summary = _dict_after(lines[-1])
    assert summary["runs"] == 2
    assert summary["mean"] == pytest.approx(statistics.fmean(totals), abs=0.01)
    assert summary["min"] == pytest.approx(min(totals), abs=0.01)


def check_keras3_with_callbacks(lines, cwd):
    status, steps = lines[0].split()[:2]
    history = _dict_after(lines[1])
    assert len(history["val_accuracy"]) == 3 if status == "finished" else 1 <= len(
        history["val_accuracy"]) < 3
    best = float(lines[2].rsplit(":", 1)[1])
    assert os.path.exists(os.path.join(cwd, "runs", "keras3_best.keras"))
    assert best == pytest.approx(max(history["val_accuracy"]), abs=0.01) and best > 0.8


def check_mlperf_cpu_runs(lines, _):
    seed, status, minutes, passed, log = lines[0].split()
    assert (seed, passed) == ("0", "True") and os.path.exists(log)
    assert status in ("success", "aborted") and (minutes == "None") == (status != "success")
    assert lines[-1].startswith("score:")


def check_train_in_notebook(lines, _):
    reached, time_to_quality, rate = lines[0].split()
    assert reached == "True" and float(time_to_quality) > 0 and float(rate) > 0
    assert 0.1 < _dict_after(lines[-1])["top1"] <= 1.0


def check_your_own_model(lines, _):
    assert lines[0].startswith("True {")
    assert _dict_after(lines[0], "True ")["accuracy"] >= 0.8  # the example's tiny target
    assert "mean_absolute_error" in _dict_after(lines[1])
    assert _dict_after(lines[2])["mean"] > 0


CHECKS = {name: globals()["check_" + name[:-3]] for name in EXAMPLES}


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs_and_prints_its_results(name, tmp_path):
    env = {**os.environ, "MLBENCH_EXAMPLE_TINY": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
    out = subprocess.run([sys.executable, os.path.join(REPO, "examples", name)], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [line for line in out.stdout.splitlines() if line.strip()]
    CHECKS[name](lines, str(tmp_path))
