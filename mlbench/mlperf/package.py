"""An MLPerf run set as an MLCommons submission package, checked by MLCommons' tools.

Layout (the training submission rules, and what `mlperf_logging.package_checker` and
`result_summarizer` read):

    DIR/<submitter>/systems/<system>.json
    DIR/<submitter>/results/<system>/<benchmark>/result_<i>.txt
    DIR/<submitter>/benchmarks/<benchmark>/implementations/mlbench/{<gin files>, README.md}

`check` runs package_checker as a subprocess and reads its verdict from its closing
line (it exits 0 even when it finds errors), then scores the package with the result
summarizer's own `summarize_results`.
"""
import dataclasses
import os
import platform
import re
import shutil
import subprocess
import sys
from typing import List, Optional

from mlbench.results import files as result_files
from mlbench.files import write_json, write_text
from mlbench.mlperf import benchmarks

# submission_status (mllog) → the system description's availability string (ruleset ≥ 4)
AVAILABILITY = {"onprem": "Available on-premise", "cloud": "Available cloud",
                "research": "Research, Development, or Internal (RDI)", "preview": "Preview"}
FOR_THE_USER = "fill in (mlbench cannot know this)"
NO_ERRORS = "PACKAGE CHECKER FOUND NO ERRORS"
FOUND_ERRORS = "PACKAGE CHECKER FOUND ERRORS"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def check_name(argument, value):
    if not isinstance(value, str) or not NAME.match(value):
        raise ValueError(f"`{argument}` ({value!r}) must be a folder-safe name: letters, "
                         "digits, '_', '-', '.'.")
    return value


def system_description(submitter, system, division, status, accelerators=0):
    """Every field MLCommons' system_desc_checker requires: filled from this machine where
    mlbench can know it, else marked for the user."""
    import tensorflow as tf
    from mlbench import machine
    from mlbench.version import __version__
    cores = os.cpu_count() or 0
    memory = _memory_gb()
    return {
        "submitter": submitter, "division": division, "status": AVAILABILITY[status],
        "system_name": system, "number_of_nodes": "1", "host_processors_per_node": "1",
        "host_processor_model_name": machine.cpu_model(),
        "host_processor_core_count": str(cores), "host_processor_vcpu_count": str(cores),
        "host_processor_frequency": FOR_THE_USER, "host_processor_caches": FOR_THE_USER,
        "host_processor_interconnect": FOR_THE_USER,
        "host_memory_capacity": f"{memory:.0f} GB" if memory else FOR_THE_USER,
        "host_storage_type": FOR_THE_USER, "host_storage_capacity": FOR_THE_USER,
        "host_networking": FOR_THE_USER, "host_networking_topology": FOR_THE_USER,
        "host_memory_configuration": FOR_THE_USER,
        "accelerators_per_node": str(accelerators),
        "accelerator_model_name": "N/A" if not accelerators else FOR_THE_USER,
        "accelerator_host_interconnect": "N/A" if not accelerators else FOR_THE_USER,
        "accelerator_frequency": "N/A" if not accelerators else FOR_THE_USER,
        "accelerator_on-chip_memories": "N/A" if not accelerators else FOR_THE_USER,
        "accelerator_memory_configuration": "N/A" if not accelerators else FOR_THE_USER,
        "accelerator_memory_capacity": "N/A" if not accelerators else FOR_THE_USER,
        "accelerator_interconnect": "N/A" if not accelerators else FOR_THE_USER,
        "accelerator_interconnect_topology": "N/A" if not accelerators else FOR_THE_USER,
        "cooling": FOR_THE_USER, "hw_notes": "",
        "framework": f"TensorFlow {tf.__version__}, tf_keras, mlbench {__version__}",
        "other_software_stack": f"Python {platform.python_version()}",
        "operating_system": platform.platform(), "sw_notes": "",
    }


def _memory_gb():
    try:
        with open("/proc/meminfo") as f:
            return int(f.readline().split()[1]) / 1e6
    except (OSError, ValueError, IndexError):
        return None


def check_free(package_dir, submitter, system):
    """Refuses, before any run, a package folder that already holds this system's results."""
    results = os.path.join(package_dir, submitter, "results", system)
    if os.path.isdir(results) and os.listdir(results):
        raise ValueError(f"`package_dir` ({package_dir!r}) already holds results of "
                         f"{submitter}/{system}; give a new one.")


def write(run_set_dir, package_dir, submitter, system, gin_files, command):
    """Packages the run set `mlbench mlperf` wrote to `run_set_dir`; returns the
    submitter's folder."""
    check_name("submitter", submitter)
    check_name("system", system)
    run_set = result_files.read(run_set_dir, "mlperf")[2]
    settings, runs = run_set.settings, run_set.runs
    benchmark = settings.benchmark
    root = os.path.join(package_dir, submitter)
    results = os.path.join(root, "results", system, benchmark)
    if os.path.isdir(results) and os.listdir(results):
        raise ValueError(f"`package_dir` ({package_dir!r}) already holds results for "
                         f"{system}/{benchmark}; give a new one.")
    os.makedirs(results, exist_ok=True)
    for i, run in enumerate(runs):
        shutil.copyfile(run.log, os.path.join(results, f"result_{i}.txt"))
    os.makedirs(os.path.join(root, "systems"), exist_ok=True)
    write_json(os.path.join(root, "systems", f"{system}.json"),
               system_description(submitter, system, run_set.division, settings.status))
    _implementation(root, benchmark, gin_files, command)
    return root


def _implementation(root, benchmark, gin_files, command):
    from mlbench import config as gin_config
    folder = os.path.join(root, "benchmarks", benchmark, "implementations", "mlbench")
    os.makedirs(folder, exist_ok=True)
    for name in gin_files:
        path = name if os.path.exists(name) else os.path.join(gin_config.shipped_gin_root(),
                                                              name)
        shutil.copyfile(path, os.path.join(folder, os.path.basename(path)))
    write_text(os.path.join(folder, "README.md"),
               f"# mlbench implementation of MLPerf {benchmark}\n\nThe runs were made by:\n\n"
               f"    {command}\n\nThe gin files that ran are beside this file; the code is the "
               "mlbench package of the version in the system description's framework field.\n")


@dataclasses.dataclass
class PackageVerdict:
    passed: bool
    errors: List[str]
    score: Optional[float]
    checker_output: str

    def text(self):
        verdict = "package accepted" if self.passed else "package REFUSED"
        lines = [f"{verdict} by mlperf_logging.package_checker"]
        lines += [f"  {e}" for e in self.errors]
        if self.score is not None:
            lines.append(f"result_summarizer score: {self.score:.4f} minutes")
        return "\n".join(lines)


def check(package_root, ruleset):
    """package_checker's verdict (its closing line and ERROR lines) and the summarizer's
    score of `package_root` (DIR/<submitter>)."""
    log = os.path.join(package_root, "package_checker.log")
    proc = subprocess.run([sys.executable, "-m", "mlperf_logging.package_checker",
                           package_root, "training", ruleset, "--log_output", log],
                          capture_output=True, text=True, timeout=900)
    output = proc.stdout + proc.stderr
    errors = [line.strip() for line in output.splitlines() if line.startswith("ERROR")]
    passed = NO_ERRORS in output and FOUND_ERRORS not in output and not errors
    if os.path.exists(log):
        os.remove(log)  # inside the package it would count as a file of the submission
    return PackageVerdict(passed, errors, summarized_score(package_root, ruleset), output)


def summarized_score(package_root, ruleset):
    """The result summarizer's score (minutes) of the package's one benchmark, or None."""
    from mlperf_logging.result_summarizer import result_summarizer
    try:
        strong = result_summarizer.summarize_results(package_root, "training", ruleset)[0]
    except Exception:  # noqa: BLE001 — a refused package may not summarize at all
        return None
    # the summarizer gives None (a package without a score) or NaN for runs it cannot score
    scores = [v for b in benchmarks.BENCHMARKS for v in strong.get(b, [])
              if v is not None and v == v]
    return float(scores[0]) if scores else None


def package_roots(path):
    """DIR/<submitter> folders under `path` (or `path` itself when it is one)."""
    if os.path.isdir(os.path.join(path, "results")):
        return [path]
    roots = sorted(os.path.join(path, d) for d in os.listdir(path)
                   if os.path.isdir(os.path.join(path, d, "results"))) if os.path.isdir(path) else []
    if not roots:
        raise ValueError(f"`check_package` ({path!r}) holds no <submitter>/results/ folder: "
                         "give the --package_dir of `mlbench mlperf`.")
    return roots


def ruleset_of(package_root):
    """The compliance ruleset of the package's benchmarks (resnet 4.0.0, bert 5.0.0)."""
    results = os.path.join(package_root, "results")
    names = {b for system in os.listdir(results)
             for b in os.listdir(os.path.join(results, system))}
    rulesets = {benchmarks.BENCHMARKS[b].default_ruleset for b in names
                if b in benchmarks.BENCHMARKS}
    if len(rulesets) != 1:
        raise ValueError(f"{package_root!r} holds benchmarks {sorted(names)}: one of "
                         f"{sorted(benchmarks.BENCHMARKS)} per package is checked at a time.")
    return rulesets.pop()
