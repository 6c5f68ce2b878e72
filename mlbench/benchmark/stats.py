"""tf_cnn_benchmarks' statistics on per-step times.

Per run: images/sec of every timed step → mean ± standard error, jitter =
1.4826 · median absolute deviation (a robust standard deviation), and total
images/sec = images of the timed steps ÷ their wall time. Across runs: mean,
std, min and max of the per-run total images/sec.
"""
import dataclasses
import math
import statistics
from typing import List


@dataclasses.dataclass
class RunStats:
    images_per_sec_mean: float
    images_per_sec_stderr: float
    jitter: float
    total_images_per_sec: float
    num_steps: int
    step_times: List[float]

    def line(self):
        return (f"images/sec: {self.images_per_sec_mean:.1f} +/- {self.images_per_sec_stderr:.1f} "
                f"(jitter = {self.jitter:.1f})")


def run_stats(step_times, images_per_step, wall_time=None):
    """Statistics of one run from its timed steps' durations (seconds)."""
    if not step_times:
        raise ValueError("no timed steps: `num_batches` must be >= 1.")
    rates = [images_per_step / t for t in step_times]
    mean = statistics.fmean(rates)
    stderr = statistics.stdev(rates) / math.sqrt(len(rates)) if len(rates) > 1 else 0.0
    median = statistics.median(rates)
    jitter = 1.4826 * statistics.median(abs(r - median) for r in rates)
    wall = wall_time if wall_time is not None else sum(step_times)
    return RunStats(mean, stderr, jitter, images_per_step * len(step_times) / wall,
                    len(step_times), list(step_times))


def across_runs(totals):
    """Mean, std, min and max of the per-run total images/sec."""
    return {"mean": statistics.fmean(totals),
            "std": statistics.stdev(totals) if len(totals) > 1 else 0.0,
            "min": min(totals), "max": max(totals), "runs": len(totals)}
