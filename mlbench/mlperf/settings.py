"""The `mlperf` gin root: submission settings of a run (bound in gin/mlperf/*.gin)."""
import gin

from mlbench.mlperf import benchmarks
from mlbench.results.records import MLPerfSettings


@gin.configurable("mlperf")
def settings(benchmark, division="closed", org="mlbench", platform="unknown", status="research",
             fallback_to_open=False, ruleset=None, prepare_data=None):
    """MLPerf submission settings.

    Args:
      benchmark: 'resnet' or 'bert'.
      division: 'closed' or 'open'.
      fallback_to_open: a closed config that breaks a rule runs as open (and says so)
        instead of being refused.
      ruleset: compliance-checker ruleset (default 4.0.0 for resnet, 5.0.0 for bert); the
        closed target follows it (BERT: 0.712 under 0.7.0, 0.720 from 1.0.0).
      prepare_data: for CPU-scale files: how to write bundled data into `train.data_dir`
        when it is missing, e.g. {"kind": "imagenet", "source": "digits", "image_size": 32}
        or {"kind": "bert", "seq_length": 64, "max_predictions": 10} (seconds of work).
    """
    if benchmark not in benchmarks.BENCHMARKS:
        raise ValueError(f"`mlperf.benchmark` ({benchmark!r}) must be one of "
                         f"{sorted(benchmarks.BENCHMARKS)}.")
    if division not in ("closed", "open"):
        raise ValueError(f"`mlperf.division` ({division!r}) must be 'closed' or 'open'.")
    return MLPerfSettings(
        benchmark=benchmark, division=division, org=org, platform=platform, status=status,
        fallback_to_open=fallback_to_open,
        ruleset=ruleset or benchmarks.BENCHMARKS[benchmark].default_ruleset,
        prepare_data=prepare_data)
