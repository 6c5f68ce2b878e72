"""The MLPerf training benchmarks mlbench runs, one record each: the metric, the quality
target per ruleset, the default ruleset, the closed division's models and optimizers, the
data kind of its records, the models whose convergence MLCommons' reference points
describe, the unit of those points and the closed rules' evaluation cadence. Every
per-benchmark fact lives here: other modules read a record, never a benchmark's name.

The targets are the compliance checker's own (`mlperf_logging/compliance_checker/
training_<ruleset>/closed_<benchmark>.yaml`, `eval_accuracy` ATLEAST_ONE_CHECK); a test
reads those files and holds this table equal to them.
"""
import dataclasses
from typing import Dict, Optional, Tuple


@dataclasses.dataclass(frozen=True)
class EvalCadence:
    """When the closed rules evaluate and on how much: every `every_samples(batch)`
    training samples, on `eval_examples` examples."""
    eval_examples: int
    every_epochs: Optional[float] = None  # ResNet: in epochs of the train set
    bert_formula: bool = False  # BERT: min(0.05 × (230.23 × B + 3,000,000), 25,000,000)

    def every_samples(self, global_batch_size, train_examples):
        if self.bert_formula:
            return min(0.05 * (230.23 * global_batch_size + 3_000_000), 25_000_000)
        return self.every_epochs * train_examples


@dataclasses.dataclass(frozen=True)
class MLPerfBenchmark:
    name: str
    metric: str                      # mlbench's name of the eval metric the log reports
    targets: Dict[str, float]        # ruleset -> target (at the ruleset's usual batch sizes)
    default_ruleset: str
    closed_models: Tuple[str, ...]
    data_kind: str                   # what `mlperf.prepare_data` writes: MLPerf-format records
    proxy_models: Tuple[str, ...]    # small models whose runs take this benchmark's RCPs
    closed_optimizers: Tuple[str, ...]  # the update rules the closed division allows
    closed_eval: EvalCadence         # the closed rules' evaluation cadence and eval set
    # the train set in one epoch when the RCPs count epochs (ResNet: ImageNet-1k's train
    # images); None when they count samples (BERT)
    epoch_examples: Optional[int] = None
    # ruleset -> (global batch from which it applies, the relaxed target)
    large_batch_targets: Optional[Dict[str, Tuple[int, float]]] = None
    # MLPerf Inference's name of the same model (LoadGen's mlperf.conf keys its settings
    # by it); None where Inference runs another task (its BERT is SQuAD, not masked LM)
    inference_name: Optional[str] = None

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


# MLPerf training rules (v1.0 on): ResNet evaluates every 4 epochs on the 50,000 ImageNet
# validation images; BERT every min(0.05·(230.23·B + 3M), 25M) samples on 10,000 held-out
# sequences.
_TRAINING = ("0.7.0", "1.0.0", "1.1.0", "2.0.0", "2.1.0", "3.0.0", "3.1.0", "4.0.0")
BENCHMARKS = {b.name: b for b in (
    MLPerfBenchmark(
        "resnet", "top1", {r: 0.759 for r in _TRAINING}, "4.0.0", ("resnet50",), "imagenet",
        ("resnet50", "resnet50_v1", "resnet_tiny"), closed_optimizers=("sgd", "lars"),
        closed_eval=EvalCadence(50_000, every_epochs=4), epoch_examples=1_281_167,
        inference_name="resnet50"),
    MLPerfBenchmark(
        "bert", "masked_lm_accuracy",
        {"0.7.0": 0.712, **{r: 0.720 for r in _TRAINING[1:] + ("4.1.0", "5.0.0", "5.1.0")}},
        "5.0.0", ("bert_large",), "bert", ("bert_large", "bert_tiny", "bert_mini"),
        closed_optimizers=("lamb",), closed_eval=EvalCadence(10_000, bert_formula=True),
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


def inference_name_of(model):
    """MLPerf Inference's name for zoo model `model` (its closed model), or None."""
    return next((b.inference_name for b in BENCHMARKS.values()
                 if b.inference_name and model in b.closed_models), None)
