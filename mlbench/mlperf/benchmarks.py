"""The MLPerf training benchmarks mlbench runs, one record each: the metric, the quality
target per ruleset, the default ruleset, the closed division's models, the data kind of
its records, and the models whose convergence MLCommons' reference points describe.

The targets are the compliance checker's own (`mlperf_logging/compliance_checker/
training_<ruleset>/closed_<benchmark>.yaml`, `eval_accuracy` ATLEAST_ONE_CHECK); a test
reads those files and holds this table equal to them.
"""
import dataclasses
from typing import Dict, Optional, Tuple


@dataclasses.dataclass(frozen=True)
class MLPerfBenchmark:
    name: str
    metric: str                      # mlbench's name of the eval metric the log reports
    targets: Dict[str, float]        # ruleset -> target (at the ruleset's usual batch sizes)
    default_ruleset: str
    closed_models: Tuple[str, ...]
    data_kind: str                   # what `mlperf.prepare_data` writes: MLPerf-format records
    proxy_models: Tuple[str, ...]    # small models whose runs take this benchmark's RCPs
    # ruleset -> (global batch from which it applies, the relaxed target)
    large_batch_targets: Optional[Dict[str, Tuple[int, float]]] = None

    def target(self, ruleset=None, global_batch_size=None):
        """The closed target under `ruleset` (default: the benchmark's), at `global_batch_size`
        where the ruleset relaxes it for very large batches (BERT under 0.7.0)."""
        ruleset = ruleset or self.default_ruleset
        if ruleset not in self.targets:
            raise ValueError(f"`ruleset` ({ruleset!r}) has no closed {self.name} target; "
                             f"known: {sorted(self.targets)}.")
        relaxed = (self.large_batch_targets or {}).get(ruleset)
        if relaxed and global_batch_size is not None and global_batch_size >= relaxed[0]:
            return relaxed[1]
        return self.targets[ruleset]


_TRAINING = ("0.7.0", "1.0.0", "1.1.0", "2.0.0", "2.1.0", "3.0.0", "3.1.0", "4.0.0")
BENCHMARKS = {b.name: b for b in (
    MLPerfBenchmark(
        "resnet", "top1", {r: 0.759 for r in _TRAINING}, "4.0.0", ("resnet50",), "imagenet",
        ("resnet50", "resnet50_v1", "resnet_tiny")),
    MLPerfBenchmark(
        "bert", "masked_lm_accuracy",
        {"0.7.0": 0.712, **{r: 0.720 for r in _TRAINING[1:] + ("4.1.0", "5.0.0", "5.1.0")}},
        "5.0.0", ("bert_large",), "bert", ("bert_large", "bert_tiny", "bert_mini"),
        large_batch_targets={"0.7.0": (8192, 0.706)}),
)}


def get(name):
    """The record of benchmark `name` ('resnet' or 'bert'); a clear error otherwise."""
    if name not in BENCHMARKS:
        raise ValueError(f"`benchmark` ({name!r}) must be one of {sorted(BENCHMARKS)}.")
    return BENCHMARKS[name]


def of_model(model):
    """The benchmark whose reference convergence applies to `model`, or None."""
    return next((b.name for b in BENCHMARKS.values() if model in b.proxy_models), None)
