"""`mlbench mlperf`: N gin-selected time-to-quality runs, their logs, checker verdicts and score."""
import dataclasses
import inspect
import json
import os
import statistics
from typing import Optional

import gin

from mlbench import api, distribute, optimizers
from mlbench import config as gin_config
from mlbench import data as data_lib
from mlbench import models
from mlbench.mlperf import checker, rules
from mlbench.mlperf.logger import MLPerfLogger


@gin.configurable("mlperf")
def settings(benchmark, division="closed", org="mlbench", platform="unknown", status="research",
             fallback_to_open=False, ruleset=None):
    """MLPerf submission settings (bound in gin/mlperf/*.gin).

    Args:
      benchmark: 'resnet' or 'bert'.
      division: 'closed' or 'open'.
      fallback_to_open: a closed config that breaks a rule runs as open (and says so)
        instead of being refused.
      ruleset: compliance-checker ruleset (default 4.0.0 for resnet, 5.0.0 for bert).
    """
    if division not in ("closed", "open"):
        raise ValueError(f"`mlperf.division` ({division!r}) must be 'closed' or 'open'.")
    return dict(benchmark=benchmark, division=division, org=org, platform=platform,
                status=status, fallback_to_open=fallback_to_open,
                ruleset=ruleset or checker.RULESETS[benchmark])


@dataclasses.dataclass
class RunRecord:
    seed: int
    reached_target: bool
    minutes: Optional[float]
    status: str
    metrics: dict
    log: str
    checker_passed: bool
    checker_output: str


def olympic_score(minutes):
    """MLPerf's score: drop the fastest and the slowest run, average the rest."""
    if len(minutes) < 3:
        raise ValueError(f"An MLPerf score needs at least 3 runs; got {len(minutes)}.")
    kept = sorted(minutes)[1:-1]
    return statistics.fmean(kept)


def _train_arg(name):
    try:
        return gin.query_parameter(f"train.{name}")
    except ValueError:
        return inspect.signature(api.run_train).parameters[name].default


def planned_info():
    """What the gin config will run, for the closed rules, before anything is built."""
    options = dict(_train_arg("optimizer_options") or {})
    options.setdefault("decay_steps", 1)
    _, hyperparameters = optimizers.build(_train_arg("optimizer"), _train_arg("learning_rate"),
                                          **options)
    return {"model": _train_arg("model"), "target": _train_arg("target"),
            "optimizer": hyperparameters}


def resolve_division(config):
    """Closed configs must follow the rules: refuse naming them, or fall back to open."""
    if config["division"] != "closed":
        return "open"
    broken = rules.violations(config["benchmark"], planned_info())
    if not broken:
        return "closed"
    if not config["fallback_to_open"]:
        raise ValueError("closed division refused; rule(s) broken: " + "; ".join(broken) +
                         " (set mlperf.fallback_to_open = True to run as open).")
    print("mlperf: running as OPEN division; closed rule(s) broken: " + "; ".join(broken))
    return "open"


def check_data():
    """Fails before init_start if the data is missing (file checks of the data source)."""
    model = _train_arg("model")
    data_lib.get(_train_arg("data"), data_dir=_train_arg("data_dir"),
                 model_info=models.info(model), **(_train_arg("data_options") or {}))


def run_once(config, division, seed, run_dir, verbose=False):
    """One run: log, train to target (or step limit), run the checker on the log."""
    os.makedirs(run_dir, exist_ok=True)
    log_path = os.path.join(run_dir, "mlperf.log")
    logger = MLPerfLogger(log_path, config["benchmark"], division, config["org"],
                          config["platform"], config["status"], distribute.is_chief())
    logger.init_start()
    result = api.run_train(seed=seed, model_dir=os.path.join(run_dir, "model"), warmup=True,
                           hooks=logger, verbose=verbose)
    verdict = checker.check(log_path, config["benchmark"], config["ruleset"])
    minutes = result.time_to_quality_s / 60 if result.reached_target else None
    return RunRecord(seed, result.reached_target, minutes, logger.status, result.final_metrics,
                     log_path, verdict.passed, verdict.output[-2000:])


def run_many(gin_files, gin_bindings=(), runs=1, seed=0, output_dir="runs/mlperf",
             verbose=False):
    """`runs` runs with seeds seed, seed+1, …; writes results.json and results.md."""
    gin_config.parse(gin_files, gin_bindings)
    config = settings()
    division = resolve_division(config)
    check_data()
    records = [run_once(config, division, seed + i, os.path.join(output_dir, f"run_{i}"), verbose)
               for i in range(runs)]
    score = _score(records)
    _write(output_dir, config, division, records, score)
    return records, score


def _score(records):
    minutes = [r.minutes for r in records]
    if len(minutes) < 3 or any(m is None for m in minutes):
        return None
    return olympic_score(minutes)


def table(records, score):
    lines = ["| run | seed | status | minutes to target | metrics | checker |",
             "|---|---|---|---|---|---|"]
    for i, r in enumerate(records):
        minutes = f"{r.minutes:.3f}" if r.minutes is not None else "-"
        metrics = ", ".join(f"{k} {v:.4f}" for k, v in r.metrics.items())
        lines.append(f"| {i} | {r.seed} | {r.status} | {minutes} | {metrics} | "
                     f"{'pass' if r.checker_passed else 'FAIL'} |")
    score_text = f"{score:.3f} minutes" if score is not None else "n/a (needs ≥3 successful runs)"
    return "\n".join(lines + ["", f"MLPerf score (olympic mean): {score_text}"])


def _write(output_dir, config, division, records, score):
    with open(os.path.join(output_dir, "results.json"), "w") as f:
        json.dump({"settings": config, "division": division, "score_minutes": score,
                   "runs": [dataclasses.asdict(r) for r in records]}, f, indent=1)
    text = table(records, score)
    with open(os.path.join(output_dir, "results.md"), "w") as f:
        f.write(text + "\n")
    print(text)
