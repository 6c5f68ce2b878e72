"""Reference convergence points (RCPs): how many epochs a configuration needs to reach
its target, over many seeds, judged with MLCommons' own rcp_checker.

MLCommons' RCPs cover the closed configurations at their batch sizes. The CPU-scale
open runs ship their own (`gin/mlperf/cpu/rcps_<config>.json`, written by
`mlbench mlperf --runs=10 --write_rcp=FILE`, i.e. `from_run_set`) in rcp_checker's
format, so `rcp_checker --custom_rcps` judges them exactly as it judges a closed
submission (`mlbench mlperf --rcp=FILE` after its runs).

rcp_checker is one-sided: it refuses a run set that converges *faster* than the
reference allows (its t-test at alpha 0.05 gives the least acceptable mean, 'Min
Epochs'). `slower` is the same test mirrored: with the equal-variance t-test the
bound is symmetric about the reference mean, so a run set whose olympic mean is
above mean + (mean − Min Epochs) converged slower than the reference at the same
confidence. We write that half ourselves because rcp_checker has no such direction.
"""
import dataclasses
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

from mlperf_logging.rcp_checker import rcp_checker

from mlbench.results import files as result_files
from mlbench.files import write_json


def epochs_to_converge(log_paths, ruleset):
    """(batch size, [epochs per run], benchmark) as rcp_checker reads the logs; a run
    that did not converge counts as 1e9."""
    batch, epochs, benchmark = rcp_checker.get_submission_epochs(list(log_paths), ruleset,
                                                                 False)
    if batch == -1 or epochs is None:
        raise ValueError(f"logs {list(log_paths)}: rcp_checker could not read a batch size "
                         "or more than one run did not converge.")
    return batch, epochs, benchmark


def record(benchmark, batch_size, epochs, hyperparameters, platform, when):
    """One RCP entry in rcp_checker's format."""
    return {f"{benchmark}_ref_{batch_size}": {
        "Benchmark": benchmark, "Creator": "mlbench", "When": when, "Platform": platform,
        "BS": batch_size, "Hyperparams": hyperparameters,
        "Epochs to converge": sorted(float(e) for e in epochs)}}


def checker_for(benchmark, ruleset, rcp_path=None):
    """MLCommons' RCP_Checker over its own RCPs, or over the file `rcp_path`."""
    if rcp_path is None:
        return rcp_checker.RCP_Checker("training", ruleset, benchmark, False)
    with open(rcp_path) as f:
        return rcp_checker.RCP_Checker("training", ruleset, benchmark, False,
                                       io.StringIO(f.read()))


@dataclasses.dataclass
class Judgement:
    passed: bool  # rcp_checker's verdict: not faster than the reference allows
    slower: bool  # the mirrored test: slower than the reference at the same confidence
    message: str
    mean_epochs: float
    reference_mean: float
    min_epochs: float
    max_epochs: float

    def text(self):
        unit = "samples" if self.reference_mean > 1e4 else "epochs"
        verdict = "not slower" if not self.slower else "SLOWER than the reference"
        mean = (f"olympic mean {self.mean_epochs:.6g} {unit} to converge"
                if self.mean_epochs != float("inf") else "more than one run did not converge")
        return (f"RCP: rcp_checker {'PASSED' if self.passed else 'FAILED'}; {verdict}: "
                f"{mean}, reference mean "
                f"{self.reference_mean:.6g}, accepted {self.min_epochs:.6g} to "
                f"{self.max_epochs:.6g}")


def judge(results_dir, ruleset, rcp_path):
    """rcp_checker's verdict on `results_dir` (result_*.txt) against `rcp_path`, run as
    MLCommons runs it, plus the mirrored 'converged slower' test."""
    proc = subprocess.run([sys.executable, "-m", "mlperf_logging.rcp_checker", results_dir,
                           "--rcp_version", ruleset, "--custom_rcps", rcp_path,
                           "--log_output", os.path.join(os.path.dirname(results_dir.rstrip("/")),
                                                        "rcp_checker.log")],
                          capture_output=True, text=True, timeout=300)
    output = proc.stdout + proc.stderr
    logs = sorted(os.path.join(results_dir, f) for f in os.listdir(results_dir)
                  if f.startswith("result_"))
    message = next((line for line in output.splitlines() if "RCP test" in line), output[-300:])
    passed = "RCP test PASSED" in output and proc.returncode == 0
    batch, epochs, benchmark = rcp_checker.get_submission_epochs(logs, ruleset, False)
    reference = checker_for(benchmark, ruleset, rcp_path)._find_rcp(batch, "full_rcps")
    if reference is None:
        raise ValueError(f"{rcp_path!r} has no RCP at batch size {batch}.")
    if epochs is None:  # more than one run did not converge: slower by any measure
        epochs = [float("inf")] * len(logs)
    return judge_epochs(epochs, reference, passed, message.strip())


def judge_epochs(epochs, reference, passed=None, message=""):
    """The mirrored bound on an olympic mean of `epochs` (see the module docstring)."""
    trimmed = sorted(epochs)[1:-1]
    mean = sum(trimmed) / len(trimmed)
    ceiling = 2 * reference["RCP Mean"] - reference["Min Epochs"]
    if passed is None:  # rcp_checker's own rule, for epochs without logs
        passed = mean >= reference["Min Epochs"]
    # plain Python values: rcp_checker's figures are numpy scalars, and results.json
    # would hold numpy.bool_ as the string "False"
    return Judgement(bool(passed), bool(mean > ceiling), message, float(mean),
                     float(reference["RCP Mean"]), float(reference["Min Epochs"]),
                     float(ceiling))


def judge_logs(log_paths, ruleset, rcp_path):
    """`judge` of logs anywhere: copied, as result_<i>.txt, to the folder layout
    rcp_checker reads."""
    with tempfile.TemporaryDirectory(prefix="mlbench_rcp_") as folder:
        results = os.path.join(folder, "results")
        os.mkdir(results)
        for i, log in enumerate(log_paths):
            shutil.copyfile(log, os.path.join(results, f"result_{i}.txt"))
        return judge(results, ruleset, rcp_path)


def check_rcp_file(rcp_path, benchmark):
    """A custom RCP file rcp_checker can read, with an entry for `benchmark`."""
    try:
        with open(rcp_path) as f:
            entries = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError(f"`--rcp` ({rcp_path!r}) is no readable RCP file: {e}") from e
    if not any(isinstance(v, dict) and v.get("Benchmark") == benchmark
               for v in entries.values()):
        raise ValueError(f"`--rcp` ({rcp_path!r}) has no RCP for {benchmark!r}; it has "
                         f"{sorted({v.get('Benchmark') for v in entries.values()})}.")


def closed_reference(benchmark, ruleset, batch_size):
    """How MLCommons' own RCPs cover `batch_size`: 'found', 'interpolated between A and
    B', or None (a closed submission at that batch size needs a new RCP)."""
    checker = checker_for(benchmark, ruleset)
    if checker._find_rcp(batch_size, "pruned_rcps") is not None:
        return "found"
    low = checker._find_top_min_rcp(batch_size, "pruned_rcps")
    high = checker._find_bottom_max_rcp(batch_size, "pruned_rcps")
    if low is not None and high is not None:
        return f"interpolated between {low['BS']} and {high['BS']}"
    return None


def read_run_set(run_set_dir):
    """The MLPerfResults record `mlbench mlperf` wrote to `run_set_dir`."""
    return result_files.read(run_set_dir, "mlperf")[2]


def from_run_set(run_set_dir, platform, when):
    """An RCP entry from a run set `mlbench mlperf` wrote (many seeds, one configuration):
    its logs' epochs to converge, batch size and hyperparameters as logged."""
    run_set = read_run_set(run_set_dir)
    logs = [run.log for run in run_set.runs]
    ruleset = run_set.settings.ruleset
    batch, epochs, benchmark = epochs_to_converge(logs, ruleset)
    return record(benchmark, batch, epochs, _logged_hyperparameters(logs[0]), platform, when)


def _logged_hyperparameters(log_path):
    """The opt_* / lars_* / lamb_* values the log carries (what the RCP was measured at)."""
    values = {}
    with open(log_path) as f:
        for line in f:
            if ":::MLLOG " not in line:
                continue
            event = json.loads(line.split(":::MLLOG ", 1)[1])
            if event["key"].startswith(("opt_", "lars_", "lamb_")) or event["key"] in (
                    "num_warmup_steps", "start_warmup_step", "gradient_accumulation_steps"):
                values[event["key"]] = event["value"]
    return values


MIN_RUNS = 10  # MLCommons' RCPs come from at least 10 seeds


def check_new_rcp_file(path, runs):
    """`--write_rcp`: enough runs for a distribution, and a new file in a real folder."""
    if path is None:
        return
    if runs < MIN_RUNS:
        raise ValueError(f"`--write_rcp` needs `--runs` >= {MIN_RUNS} (got {runs}): a "
                         "reference convergence point is a distribution over seeds.")
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.exists(path) or not os.path.isdir(parent):
        raise ValueError(f"`--write_rcp` ({path!r}) must be a new file in an existing "
                         "directory.")


def write_from_run_set(run_set_dir, path, gin_files, seeds):
    """The run set's RCP (`from_run_set`), labelled with the machine, precision, config
    and seeds (bf16 and float32 runs of one seed converge at different epochs)."""
    import datetime
    from mlbench.machine import cpu_model
    from mlbench.version import __version__
    precision = read_run_set(run_set_dir).precision
    platform = (f"{cpu_model()}, {os.cpu_count()} cores, {precision}, mlbench "
                f"{' '.join(gin_files)}, seeds {seeds[0]}-{seeds[1]}")
    entry = from_run_set(run_set_dir, platform,
                         f"{datetime.date.today().isoformat()}, mlbench {__version__}")
    write(path, entry)
    (name, values), = entry.items()
    print(f"wrote the RCP {name} ({len(values['Epochs to converge'])} runs) to {path}")


def write(path, entries):
    write_json(path, entries, indent=1)


def pooled(rcp_paths, platform, when):
    """One RCP entry from several RCP files of one benchmark, batch size and set of
    hyperparameters: their epochs together (e.g. a bf16 and a float32 run set, so the
    reference covers the precisions `precision="auto"` picks on different machines)."""
    entries = []
    for path in rcp_paths:
        with open(path) as f:
            entries += list(json.load(f).values())
    first = entries[0]
    for entry in entries[1:]:
        for key in ("Benchmark", "BS", "Hyperparams"):
            if entry[key] != first[key]:
                raise ValueError(f"RCPs {list(rcp_paths)} differ in {key!r} ({first[key]!r} vs "
                                 f"{entry[key]!r}): only one configuration's runs can be pooled.")
    epochs = [e for entry in entries for e in entry["Epochs to converge"]]
    return record(first["Benchmark"], first["BS"], epochs, first["Hyperparams"], platform, when)
