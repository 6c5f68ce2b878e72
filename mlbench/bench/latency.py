"""Latency per batch and its percentiles, the way MLPerf's LoadGen computes them.

A batch's latency runs from its dispatch to its outputs on the host. Percentiles are
nearest-rank, `sorted[ceil(p·n) − 1]` (LoadGen's rule; numpy's `method="inverted_cdf"`),
never a mean of the fastest p % (NVIDIA's DeepLearningExamples' TF2 "p90", which can lie
below the average). Throughput is examples ÷ the timed wall time, never a mean of
per-batch rates (which over-weights the fast batches). Warm-up batches run first and
are counted, never timed.
"""
import math
import time

from mlbench.results.records import LatencyStats

PERCENTILES = (50, 90, 95, 99)


def nearest_rank(values, percent):
    """The `percent`-th percentile of `values` by the nearest-rank rule."""
    if not values:
        raise ValueError("`values` is empty: no batch was timed.")
    if not 0 < percent <= 100:
        raise ValueError(f"`percent` ({percent}) must be in (0, 100].")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(percent / 100 * len(ordered)) - 1)]


def summarize(latencies_s, batch_size, wall_s, warmup_batches, stopped_by="count"):
    """LatencyStats of the timed batches' latencies (seconds) over `wall_s`."""
    ms = [1000 * x for x in latencies_s]
    return LatencyStats(batch_size, len(ms), warmup_batches,
                        batch_size * len(ms) / wall_s, wall_s, sum(ms) / len(ms),
                        *(nearest_rank(ms, p) for p in PERCENTILES), max(ms), stopped_by)


def measure(run_batch, batch_size, num_warmup=10, min_batches=50, min_seconds=1.0,
            max_seconds=60.0, clock=time.perf_counter):
    """Runs `run_batch()` (dispatch → outputs on the host) `num_warmup` times untimed, then
    timed until at least `min_batches` batches and `min_seconds` have passed, or
    `max_seconds` (then `stopped_by='budget'`); the LatencyStats."""
    for _ in range(num_warmup):
        run_batch()
    latencies, start = [], clock()
    while True:
        begin = clock()
        run_batch()
        end = clock()
        latencies.append(end - begin)
        elapsed = end - start
        if len(latencies) >= min_batches and elapsed >= min_seconds:
            return summarize(latencies, batch_size, elapsed, num_warmup)
        if elapsed >= max_seconds:
            return summarize(latencies, batch_size, elapsed, num_warmup, "budget")


def table(rows, precision, unit="examples"):
    """DeepLearningExamples' table: batch | examples/sec | mean | p90 | p95 | p99 (ms)."""
    lines = [f"precision {precision}; latency per batch, dispatch to outputs on the host, "
             "nearest-rank percentiles (ms)",
             f"{'batch':>6} {unit + '/sec':>14} {'mean':>9} {'p50':>9} {'p90':>9} "
             f"{'p95':>9} {'p99':>9} {'max':>9} {'batches':>8} {'peak MiB':>9}"]
    for r in rows:
        lines.append(f"{r.batch_size:>6} {r.examples_per_sec:>14.1f} {r.mean_ms:>9.2f} "
                     f"{r.p50_ms:>9.2f} {r.p90_ms:>9.2f} {r.p95_ms:>9.2f} {r.p99_ms:>9.2f} "
                     f"{r.max_ms:>9.2f} {r.batches:>8} "
                     + (f"{r.peak_memory_mb:>9.0f}" if r.peak_memory_mb is not None else
                        f"{'-':>9}")
                     + ("  (time budget: fewer batches)" if r.stopped_by == "budget" else ""))
    return "\n".join(lines)
