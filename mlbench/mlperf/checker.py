"""Runs MLCommons' own compliance checker on a log, as a subprocess, and keeps its verdict."""
import dataclasses
import subprocess
import sys

from mlbench.mlperf import benchmarks


@dataclasses.dataclass
class Verdict:
    passed: bool
    returncode: int
    ruleset: str
    output: str


def check(log_path, benchmark, ruleset=None):
    """`python -m mlperf_logging.compliance_checker --usage training --ruleset R log`."""
    ruleset = ruleset or benchmarks.get(benchmark).default_ruleset
    cmd = [sys.executable, "-m", "mlperf_logging.compliance_checker", "--usage", "training",
           "--ruleset", ruleset, "--log_output", log_path + ".checker.txt", log_path]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    return Verdict(proc.returncode == 0, proc.returncode, ruleset, proc.stdout + proc.stderr)
