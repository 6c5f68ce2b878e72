"""MLPerf scores exactly as MLCommons computes them, with mlperf_logging's own code.

Runs per benchmark come from `mlperf_logging.benchmark_meta` (ResNet 5, BERT
10); the olympic average is the result summarizer's
`_compute_olympic_average`: sort, drop the fastest and the slowest, average
the rest, where a run that did not converge counts as a dropped slowest run,
and more non-converging runs than may be dropped give no score.
"""
from typing import List, Optional

from mlperf_logging import benchmark_meta
from mlperf_logging.result_summarizer import result_summarizer

from mlbench.results.records import Score


def log_minutes(log_path, ruleset):
    """Minutes from run_start to run_stop of a log, read as the result summarizer reads a
    result file (`_read_result_file`, `_query_run_start_stop`): MLCommons' time to train."""
    start, stop = result_summarizer._query_run_start_stop(
        result_summarizer._read_result_file(log_path, "training", ruleset))
    return (stop - start) / 60 / 1000


def required_runs(benchmark):
    """Result files a submission needs for `benchmark` (training)."""
    return benchmark_meta.get_result_file_counts("training")[benchmark]


def max_dropped(benchmark):
    # The summarizer's own rule (`_compute_strong_score_standalone`), inline there.
    return 4 if benchmark == "unet3d" else 1




def score(benchmark, minutes: List[Optional[float]]):
    """The olympic score of runs' minutes to target (None = the run did not converge)."""
    required = required_runs(benchmark)
    converged = sorted(m for m in minutes if m is not None)
    dropped = len(minutes) - len(converged)
    if dropped > max_dropped(benchmark):
        return Score(None, len(minutes), required, False,
                     f"no score: {dropped} runs did not converge (at most "
                     f"{max_dropped(benchmark)} may be dropped)")
    value = result_summarizer._compute_olympic_average(converged, dropped, max_dropped(benchmark))
    valid = len(minutes) >= required and value is not None
    if value is None:
        label = f"no score: nothing left after dropping ({len(minutes)} runs)"
    elif valid:
        label = f"{value:.3f} minutes (olympic mean of {len(minutes)} runs)"
    else:
        label = (f"{value:.3f} minutes: not a valid MLPerf score ({len(minutes)} of "
                 f"{required} runs)")
    return Score(value, len(minutes), required, valid, label)
