"""The closed-division rules mlbench can check before a run (MLPerf training rules).

Each rule is (name, predicate over the run's info, what is expected). The
compliance checker enforces the logged subset after the run; checking here
refuses a closed run up front instead of discovering it after hours.
"""
import math

from mlbench.mlperf import benchmarks


def _power_of_two_multiple(value, unit):
    if value <= 0:
        return False
    exponent = math.log2(value / unit)
    return abs(exponent - round(exponent)) < 1e-9


def _resnet_rules(info):
    opt = info["optimizer"]
    rules = [("resnet: opt_name in {sgd, lars}", opt["name"] in ("sgd", "lars"))]
    if opt["name"] == "lars":
        rules += [
            ("resnet/lars: lars_opt_end_learning_rate == 1e-4",
             math.isclose(opt["end_learning_rate"], 1e-4)),
            ("resnet/lars: lars_opt_learning_rate_decay_poly_power == 2", opt["power"] == 2),
            ("resnet/lars: lars_opt_weight_decay == 1e-4 × 2^k",
             _power_of_two_multiple(opt["weight_decay"], 1e-4)),
            ("resnet/lars: polynomial schedule", opt["schedule"] == "polynomial")]
    return rules


def _bert_rules(info):
    return [("bert: opt_name == lamb", info["optimizer"]["name"] == "lamb")]


def violations(benchmark, info, ruleset=None):
    """Names of the closed rules that `info` (api's configured info) breaks under `ruleset`
    (default: the benchmark's)."""
    record = benchmarks.get(benchmark)
    metric = record.metric
    value = record.target(ruleset, info.get("global_batch_size"))
    target = info.get("target") or {}
    rules = [(f"{benchmark}: model in {record.closed_models}",
              info["model"] in record.closed_models),
             (f"{benchmark}: target {metric} >= {value}", target.get(metric, 0) >= value)]
    rules += _resnet_rules(info) if benchmark == "resnet" else _bert_rules(info)
    return [name for name, ok in rules if not ok]
