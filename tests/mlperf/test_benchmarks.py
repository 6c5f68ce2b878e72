"""The MLPerf benchmark table against the compliance checker's own closed rules."""
import os
import re

import mlperf_logging
import pytest
import yaml

from mlbench.mlperf import benchmarks, rules
from mlbench.training import optimizers
from mlbench.training.callbacks import RunInfo

CHECKER = os.path.join(os.path.dirname(mlperf_logging.__file__), "compliance_checker")


def _closed_thresholds(ruleset, benchmark):
    """The `>=` thresholds of eval_accuracy's check in training_<ruleset>/closed_<b>.yaml."""
    path = os.path.join(CHECKER, f"training_{ruleset}", f"closed_{benchmark}.yaml")
    for block in yaml.safe_load(open(path)):
        for key, rule in block.items():
            if key == "KEY" and rule.get("NAME") == "eval_accuracy":
                check = rule.get("ATLEAST_ONE_CHECK")
                if check:
                    return [float(v) for v in re.findall(r">=\s*([0-9.]+)", check)]
    raise AssertionError(f"no eval_accuracy check in {path}")


def _checker_rulesets(benchmark):
    return {d[len("training_"):] for d in os.listdir(CHECKER)
            if d.startswith("training_") and not d.endswith("_warn")
            and os.path.exists(os.path.join(CHECKER, d, f"closed_{benchmark}.yaml"))}


@pytest.mark.parametrize("name", sorted(benchmarks.BENCHMARKS))
def test_targets_are_the_checkers_for_every_ruleset_it_knows(name):
    record = benchmarks.BENCHMARKS[name]
    assert set(record.targets) == _checker_rulesets(name)
    for ruleset, target in record.targets.items():
        thresholds = _closed_thresholds(ruleset, name)
        assert thresholds[0] == target, ruleset
        relaxed = (record.large_batch_targets or {}).get(ruleset)
        assert (thresholds[1:] or [None])[0] == (relaxed[1] if relaxed else None), ruleset
    assert record.default_ruleset in record.targets


def test_bert_target_follows_the_ruleset():
    bert = benchmarks.get("bert")
    assert bert.target("0.7.0") == 0.712 and bert.target("1.0.0") == 0.720
    assert bert.target("0.7.0", global_batch_size=8192) == 0.706
    assert bert.target() == 0.720  # 5.0.0
    info = RunInfo(model="bert_large", global_batch_size=448, gradient_accumulation_steps=1,
                   train_steps=1, eval_every=1, epoch_steps=0, num_train_examples=None,
                   num_eval_examples=None, seed=0,
                   optimizer=optimizers.hyperparameters("lamb", 4e-4),
                   target={"masked_lm_accuracy": 0.712})
    assert rules.violations("bert", info, "0.7.0") == []
    assert rules.violations("bert", info, "5.0.0") == ["bert: target masked_lm_accuracy >= 0.72"]


def test_unknown_benchmark_and_ruleset_are_named():
    with pytest.raises(ValueError,
                       match=r"`benchmark` \('gpt3'\) must be one of \['bert', 'resnet'\]"):
        benchmarks.get("gpt3")
    with pytest.raises(ValueError, match=r"`ruleset` \('0.6.0'\) has no closed resnet target"):
        benchmarks.get("resnet").target("0.6.0")
    assert benchmarks.of_model("resnet_tiny") == "resnet" and benchmarks.of_model("vgg16") is None
