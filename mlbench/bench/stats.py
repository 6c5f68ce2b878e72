"""tf_cnn_benchmarks' statistics on per-step times, computed exactly as it computes them.

`benchmark_cnn.get_perf_timing`: images/sec = batch ÷ mean(step time) (not the
mean of per-step rates), uncertainty = np.std(rates) (ddof 0) ÷ √n, jitter =
1.4826 · median absolute deviation of the rates. Total images/sec = images of
the timed steps ÷ their wall time (host gaps included), as its final line.
Across runs: mean, std, min and max of the per-run total images/sec.
"""
import statistics

import numpy as np

from mlbench.results.records import RunStats, Stats


def perf_timing(global_batch_size, step_times):
    """(speed mean, uncertainty, jitter): tf_cnn_benchmarks' `get_perf_timing`."""
    times = np.array(step_times, dtype=np.float64)
    speeds = global_batch_size / times
    mean = global_batch_size / np.mean(times)
    uncertainty = np.std(speeds) / np.sqrt(float(len(speeds)))
    jitter = 1.4826 * np.median(np.abs(speeds - np.median(speeds)))
    return float(mean), float(uncertainty), float(jitter)


def run_stats(step_times, global_batch_size, wall_time=None):
    """Statistics of one run from its timed steps' durations (seconds)."""
    if not step_times:
        raise ValueError("no timed steps: `num_batches` must be >= 1.")
    mean, uncertainty, jitter = perf_timing(global_batch_size, step_times)
    wall = wall_time if wall_time is not None else sum(step_times)
    return RunStats(mean, uncertainty, jitter, global_batch_size * len(step_times) / wall,
                    len(step_times), list(step_times))


def across_runs(totals):
    """Mean, std, min and max of the per-run total images/sec."""
    return Stats(mean=statistics.fmean(totals),
                 std=statistics.stdev(totals) if len(totals) > 1 else 0.0,
                 min=min(totals), max=max(totals), runs=len(totals))
