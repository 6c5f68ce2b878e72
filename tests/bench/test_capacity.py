"""The largest batch within a memory budget: each probe a child process, stopped past the
budget, so a batch that does not fit never takes the caller down."""
import os

import pytest

from harness import mlbench_here
from mlbench.bench import capacity
from mlbench.training import memory


def test_a_probe_past_the_budget_is_stopped_and_the_largest_batch_that_fit_is_reported():
    alone = capacity._probe("simple_cnn", 1024, "float32", False, budget=1e9, timeout_s=600)
    assert alone.fits and alone.peak_memory_mb > 0
    # 50 MiB above batch 1024's own peak: batch 2048's activations do not fit in it
    budget = alone.peak_memory_mb + 50
    found = capacity.max_batch("simple_cnn", precision="float32", memory_budget_mb=budget,
                               start=1024, limit=4096, tolerance=0.5, verbose=False)
    assert [p.batch_size for p in found.probes] == [1024, 2048, 1536]
    assert [p.fits for p in found.probes] == [True, False, False]
    assert all("budget" in p.why for p in found.probes[1:])
    assert found.largest_batch == 1024 and found.fastest_batch == 1024
    assert found.memory == memory.CPU_PEAK  # what the children said they measured
    assert abs(found.probes[0].peak_memory_mb - alone.peak_memory_mb) < 20


def test_each_row_of_the_sweep_carries_its_peak_and_what_it_measures(tmp_path):
    done = mlbench_here("infer", "simple_cnn", "--batch_sizes=1,512", "--min_batches=2",
                        "--min_seconds=0", "--num_warmup_batches=1", "--precision=float32",
                        f"--output_dir={tmp_path}")
    assert done.returncode == 0, done.stderr
    from mlbench.results import files
    kind, _, result = files.read(str(tmp_path))
    assert kind == "inference"
    assert result.memory == memory.CPU_PEAK
    small, large = (row.peak_memory_mb for row in result.rows)
    assert 0 < small <= large  # the high-water mark grows with the batch's activations
    assert "peak MiB" in done.stdout


def test_bad_budgets_and_ranges_are_refused_before_any_probe():
    for bad in (dict(memory_budget_mb=-1), dict(start=0), dict(start=8, limit=4),
                dict(tolerance=1.0)):
        with pytest.raises(ValueError):
            capacity.max_batch("simple_cnn", **{"memory_budget_mb": 100, **bad},
                               verbose=False)
    assert memory.resident_mb(os.getpid()) > 0


def test_a_training_step_is_probed_and_the_accumulation_for_a_target_batch_is_reported():
    found = capacity.max_batch("mlp", precision="float32", memory_budget_mb=100_000, start=32,
                               limit=64, train=True, target_batch=96, verbose=False)
    assert [p.batch_size for p in found.probes] == [32, 64] and found.largest_batch == 64
    assert all(p.fits and p.peak_memory_mb > 0 and p.examples_per_sec > 0
               for p in found.probes)  # read from each child's benchmark result.json
    assert found.accumulation_steps == 2  # 96 = 2 x 48, and 48 <= 64
    assert found.lines()[-1] == "global batch 96: 2 gradient accumulation step(s) of 48"
    assert capacity.accumulation_steps(96, 40) == 3  # 32 fits; 48 does not
    assert capacity.accumulation_steps(96, 20) == 6  # 16 (96 / 5 is no integer)
    assert capacity.accumulation_steps(7, 2) == 7 and capacity.accumulation_steps(8, 0) is None
    refused = mlbench_here("benchmark", "--model=mlp", "--max_batch", "--target_batch=0")
    assert refused.returncode == 2 and "target_batch" in refused.stderr
