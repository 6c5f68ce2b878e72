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


def _line(lines, pattern):
    """The one printed line matching `pattern` (mlbench's own progress lines around it)."""
    found = [m for m in (re.match(pattern, line) for line in lines) if m]
    assert len(found) == 1, (pattern, lines[-20:])
    return found[0]


def check_benchmark_like_the_page(lines, _):
    runs = [re.match(r"images/sec: [\d.]+ \+/- [\d.]+ \(jitter = [\d.]+\) total images/sec: "
                     r"([\d.]+)$", line) for line in lines]
    totals = [float(m.group(1)) for m in runs if m]
    assert len(totals) == 2  # num_runs=2
    runs, mean, _, low = _line(lines, r"across (\d+) runs: mean ([\d.]+) std ([\d.]+) "
                                     r"min ([\d.]+) max").groups()
    assert int(runs) == 2
    assert float(mean) == pytest.approx(statistics.fmean(totals), abs=0.01)
    assert float(low) == pytest.approx(min(totals), abs=0.01)


def check_keras3_with_callbacks(lines, cwd):
    status = _line(lines, r"(finished|stopped) (\d+) \{").group(1)
    history = _dict_after(_line(lines, r"\{'loss'").string)
    epochs = len(history["val_accuracy"])
    assert epochs == 3 if status == "finished" else 1 <= epochs < 3
    best = float(_line(lines, r"best saved model, eval accuracy: ([\d.]+)$").group(1))
    assert os.path.exists(os.path.join(cwd, "runs", "keras3_best.keras"))
    # ModelCheckpoint kept the epoch with the best val_accuracy: the loaded model scores it
    assert best == pytest.approx(max(history["val_accuracy"]), abs=0.001) and best > 0.8


def check_mlperf_cpu_runs(lines, _):
    run = _line(lines, r"0 (success|aborted) (\S+) (True|False) (\S+mlperf\.log)$")
    status, minutes, passed, log = run.groups()
    assert passed == "True" and os.path.exists(log)  # the compliance checker accepted it
    assert (minutes == "None") == (status != "success")
    _line(lines, r"score: ")


def check_train_in_notebook(lines, _):
    reached, time_to_quality, rate = _line(lines, r"(True|False) ([\d.]+|None) ([\d.]+)$").groups()
    assert reached == "True" and float(time_to_quality) > 0 and float(rate) > 0
    assert 0.1 < _dict_after(lines[-1])["top1"] <= 1.0


def check_your_own_model(lines, _):
    reached = _line(lines, r"(True|False) \{'accuracy'")
    assert reached.group(1) == "True"
    assert _dict_after(reached.string, "True ")["accuracy"] >= 0.8  # the example's tiny target
    assert "mean_absolute_error" in _dict_after(_line(lines, r"\{'mean_absolute_error'").string)
    assert float(_line(lines, r"images/sec ([\d.]+) ").group(1)) > 0


CHECKS = {name: globals()["check_" + name[:-3]] for name in EXAMPLES}


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs_and_prints_its_results(name, tmp_path):
    env = {**os.environ, "MLBENCH_EXAMPLE_TINY": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
    out = subprocess.run([sys.executable, os.path.join(REPO, "examples", name)], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [line for line in out.stdout.splitlines() if line.strip()]
    CHECKS[name](lines, str(tmp_path))
