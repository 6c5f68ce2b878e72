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


def _optimizer_rules(record, opt):
    """The closed division's update rules for the benchmark, and LARS' own settings."""
    allowed = record.closed_optimizers
    named = f"== {allowed[0]}" if len(allowed) == 1 else "in {" + ", ".join(allowed) + "}"
    rules = [(f"{record.name}: opt_name {named}", opt.name in allowed)]
    if opt.name == "lars":
        lars = f"{record.name}/lars"
        rules += [
            (f"{lars}: lars_opt_end_learning_rate == 1e-4",
             math.isclose(opt.end_learning_rate, 1e-4)),
            (f"{lars}: lars_opt_learning_rate_decay_poly_power == 2", opt.power == 2),
            (f"{lars}: lars_opt_weight_decay == 1e-4 × 2^k",
             _power_of_two_multiple(opt.weight_decay, 1e-4)),
            (f"{lars}: polynomial schedule", opt.schedule == "polynomial")]
    return rules


def violations(benchmark, info, ruleset=None):
    """Names of the closed rules that `info` (the run's RunInfo: model, target, optimizer,
    global batch) breaks under `ruleset` (default: the benchmark's)."""
    record = benchmarks.get(benchmark)
    metric = record.metric
    value = record.target(ruleset, info.global_batch_size)
    target = info.target or {}
    rules = [(f"{benchmark}: model in {record.closed_models}",
              info.model in record.closed_models),
             (f"{benchmark}: target {metric} >= {value}", target.get(metric, 0) >= value)]
    rules += _optimizer_rules(record, info.optimizer)
    return [name for name, ok in rules if not ok]
