"""`mlbench mlperf`: N gin-selected time-to-quality runs, their logs, checker verdicts and score.

One RunPlan is resolved from gin (the data source is built once, its files
checked before any `init_start`); the closed-division rules are checked
against that plan; each run is the same plan with its own seed and its own
fresh run directory: MLPerf runs always start from freshly initialised weights.
"""
import dataclasses
import os
import shutil
import tempfile
from typing import Optional

from mlbench import config as gin_config
from mlbench import plan as plan_lib
from mlbench import reporting
from mlbench.results import files as result_files
from mlbench.plan.arguments import train_defaults
from mlbench.distribute import cluster
from mlbench.files import write_text
from mlbench.machine import environment
from mlbench.mlperf import benchmarks, checker, package, rcp, rules, scoring
from mlbench.mlperf.logger import MLPerfLogger
from mlbench.mlperf import settings as settings_lib
from mlbench.results.records import MLPerfResults, MLPerfRun, Score
from mlbench.trainer.runner import configured_info
from mlbench.trainer.runner import run as run_plan


def resolve_division(settings, plan):
    """Closed configs must follow the rules: refuse naming them, or fall back to open."""
    if settings.division != "closed":
        return "open"
    broken = rules.violations(settings.benchmark, configured_info(plan), settings.ruleset)
    if not broken:
        return "closed"
    if not settings.fallback_to_open:
        raise ValueError("closed division refused; rule(s) broken: " + "; ".join(broken) +
                         " (set mlperf.fallback_to_open = True to run as open).")
    print("mlperf: running as OPEN division; closed rule(s) broken: " + "; ".join(broken))
    return "open"


def run_dirs(output_dir, runs):
    """The runs' directories; refused if any already holds a run (no restored weights)."""
    dirs = [os.path.join(output_dir, f"run_{i}") for i in range(runs)]
    used = [d for d in dirs if os.path.isdir(d) and os.listdir(d)]
    if used:
        raise ValueError(f"`output_dir` ({output_dir!r}) already holds run(s) {used}: MLPerf "
                         "runs start from freshly initialised weights, so a used run "
                         "directory is never resumed. Give a new or empty output_dir.")
    return dirs


def run_once(plan, settings, division, seed, run_dir, verbose=False):
    """One run: log, train to target (or step limit), run the checker on the log."""
    os.makedirs(run_dir, exist_ok=True)
    log_path = os.path.join(run_dir, "mlperf.log")
    logger = MLPerfLogger(log_path, settings.benchmark, division, settings.org,
                          settings.platform, settings.status, cluster.is_chief())
    logger.init_start()
    directory = dataclasses.replace(plan.directory, model_dir=os.path.join(run_dir, "model"),
                                    resume=False)
    plan_for_run = dataclasses.replace(plan, seed=seed, warmup=True, directory=directory,
                                       verbose=verbose)
    result = run_plan(plan_for_run, callbacks=[logger])
    verdict = checker.check(log_path, settings.benchmark, settings.ruleset)
    # MLCommons' time to train: the log's run_start → run_stop, as the summarizer reads it
    minutes = (scoring.log_minutes(log_path, settings.ruleset)
               if result.reached_target and verdict.passed else None)
    return MLPerfRun(seed, result.reached_target, minutes, logger.status, result.final_metrics,
                     log_path, verdict.passed, verdict.output[-2000:])


def _resolved():
    """The current gin state's mlperf settings and RunPlan (bundled data written first
    when the settings say how and it is missing)."""
    settings = settings_lib.settings()
    arguments = plan_lib.train_arguments({}, train_defaults())
    if settings.prepare_data and arguments.data_dir:
        prepare_data(arguments.data_dir, **settings.prepare_data)
    return settings, plan_lib.resolve(arguments)


def _data_to_write(settings, arguments):
    """The data_dir a run would fill with bundled data first, or None."""
    data_dir = arguments.data_dir
    if settings.prepare_data and data_dir and not _has_files(data_dir):
        return data_dir
    return None


def _has_files(data_dir):
    return os.path.isdir(data_dir) and bool(os.listdir(data_dir))


def prepare_data(data_dir, kind, quiet=False, **options):
    """Writes bundled real data as MLPerf-format records into `data_dir` if it is missing."""
    if _has_files(data_dir):
        return
    kinds = sorted({b.data_kind for b in benchmarks.BENCHMARKS.values()})
    if kind not in kinds:
        raise ValueError(f"`mlperf.prepare_data` kind ({kind!r}) must be one of {kinds}.")
    if not quiet:
        print(f"mlperf: writing the bundled {kind} data to {data_dir} (first use)")
    partial = data_dir.rstrip("/") + ".partial"  # renamed into place only when complete
    shutil.rmtree(partial, ignore_errors=True)
    if kind == "imagenet":
        from mlbench.data.writers import write_bundled_imagenet
        write_bundled_imagenet(partial, **options)
    else:
        from mlbench.data.bert_writer import write_bert_pretraining
        write_bert_pretraining(partial, **options)
    os.replace(partial, data_dir)


def planned(gin_files, gin_bindings=()):
    """(mlperf settings, RunPlan, division, the data_dir a run would write first or None)
    of a gin config, nothing built or written: missing bundled data is written to a
    temporary folder, planned against and removed."""
    with gin_config.scope(gin_files, gin_bindings, reads=("mlperf", "train")):
        settings = settings_lib.settings()
        arguments = plan_lib.train_arguments({}, train_defaults())
        to_write = _data_to_write(settings, arguments)
        if to_write is None:
            plan = plan_lib.resolve(arguments)
        else:
            with tempfile.TemporaryDirectory(prefix="mlbench_dry_run_") as folder:
                arguments = dataclasses.replace(arguments, data_dir=os.path.join(folder, "data"))
                prepare_data(arguments.data_dir, quiet=True, **settings.prepare_data)
                plan = plan_lib.resolve(arguments)
        return settings, plan, resolve_division(settings, plan), to_write


def dry_run_text(settings, plan, division, data_to_write=None):
    """What `run_many` would run, and for a closed run how MLCommons' RCPs cover its
    batch size (`mlbench mlperf --dry_run`)."""
    split = plan.distribution
    lines = [f"benchmark {settings.benchmark} (ruleset {settings.ruleset}), "
             f"{division} division", *plan.summary()]
    if data_to_write:
        lines.append(f"{data_to_write} is missing: a run writes the bundled "
                     f"{settings.prepare_data['kind']} data there first")
    if division == "closed":
        coverage = rcp.closed_reference(settings.benchmark, settings.ruleset,
                                        split.global_batch_size)
        lines.append(f"MLCommons RCP at batch {split.global_batch_size}: "
                     f"{coverage or 'none (a closed submission at this batch needs one)'}")
    return "\n".join(lines)


def run_many(gin_files, gin_bindings=(), runs=1, seed=0, output_dir="runs/mlperf",
             verbose=False, rcp_path=None):
    """`runs` runs with seeds seed, seed+1, …; writes results.json and results.md.

    With `rcp_path` (a custom RCP file) the runs' convergence is judged against it
    (`rcp.judge`: rcp_checker and the mirrored 'slower' bound) and recorded as `rcp` in
    results.json (`judgement(output_dir)` reads it back).

    Returns:
      (list of MLPerfRun, Score).
    """
    with gin_config.scope(gin_files, gin_bindings, reads=("mlperf", "train")):
        if rcp_path is not None:
            rcp.check_rcp_file(rcp_path, settings_lib.settings().benchmark)
        settings, plan = _resolved()
        division = resolve_division(settings, plan)
        dirs = run_dirs(output_dir, runs)
        records = [run_once(plan, settings, division, seed + i, d, verbose)
                   for i, d in enumerate(dirs)]
    score = scoring.score(settings.benchmark, [r.minutes for r in records])
    judgement = (rcp.judge_logs([r.log for r in records], settings.ruleset, rcp_path)
                 if rcp_path is not None else None)
    _write(output_dir, settings, division, plan.numerics.precision, records, score, judgement)
    return records, score


@dataclasses.dataclass(frozen=True)
class Submission:
    """Where `submit` writes the MLCommons package: `package_dir/<submitter>/...`."""
    package_dir: str
    submitter: str
    system: str

    def check(self):
        """Refuses bad names and a package folder holding this system's results."""
        package.check_name("submitter", self.submitter)
        package.check_name("system", self.system)
        package.check_free(self.package_dir, self.submitter, self.system)

    def bindings(self):
        """The logs carry the submitter and system the package names."""
        return [f"mlperf.org = {self.submitter!r}", f"mlperf.platform = {self.system!r}"]


@dataclasses.dataclass
class Outcome:
    """What `submit` did: the runs, their score, and the verdicts asked for."""
    records: list
    score: Score
    rcp: Optional[dict] = None  # the RCP verdict recorded in results.json
    package_root: Optional[str] = None
    package_accepted: Optional[bool] = None

    @property
    def converged(self):
        """Every run reached its target with a compliant log, and no RCP says slower."""
        runs_ok = all(r.reached_target and r.checker_passed for r in self.records)
        return runs_ok and (self.rcp is None or (self.rcp["passed"] and not self.rcp["slower"]))


def submit(gin_files, gin_bindings=(), runs=1, seed=0, output_dir="runs/mlperf",
           verbose=False, rcp_path=None, write_rcp=None, submission=None, command=None,
           dry_run=False):
    """The whole `mlbench mlperf` flow, callable from a notebook: every argument checked
    before any run, `run_many`, then an RCP written (`write_rcp`), and the run set
    packaged and checked by MLCommons' tools (`submission`, a `Submission`).

    With `dry_run`, prints what would run and returns None. `command` is the command line
    the package's README records (default: this call, described).
    """
    if runs < 1:
        raise ValueError(f"`runs` ({runs}) must be >= 1.")
    bindings = list(gin_bindings)
    if submission is not None:
        submission.check()
        bindings += submission.bindings()
    rcp.check_new_rcp_file(write_rcp, runs)
    if dry_run:
        print(dry_run_text(*planned(gin_files, bindings)))
        return None
    records, score = run_many(gin_files, bindings, runs, seed, output_dir, verbose, rcp_path)
    outcome = Outcome(records, score, judgement(output_dir) if rcp_path else None)
    if write_rcp:
        rcp.write_from_run_set(output_dir, write_rcp, gin_files, (seed, seed + runs - 1))
    if submission is not None:
        outcome.package_root = package.write(
            output_dir, submission.package_dir, submission.submitter, submission.system,
            gin_files, command or f"mlbench.mlperf.run.submit({list(gin_files)!r}, runs={runs})")
        print(f"wrote the package {outcome.package_root}")
        outcome.package_accepted = check_packages([outcome.package_root])
    return outcome


def check_packages(roots):
    """package_checker's verdict and the summarizer's score per package (printed);
    True when every package was accepted."""
    accepted = True
    for root in roots:
        verdict = package.check(root, package.ruleset_of(root))
        print(f"{root}: {verdict.text()}")
        accepted = accepted and verdict.passed
    return accepted


def judgement(output_dir):
    """The RCP verdict `run_many` recorded in `output_dir` (a dict with `text`), or None."""
    return rcp.read_run_set(output_dir).rcp


def table(records, score):
    lines = ["| run | seed | status | minutes to target | metrics | checker |",
             "|---|---|---|---|---|---|"]
    for i, r in enumerate(records):
        minutes = f"{r.minutes:.3f}" if r.minutes is not None else "-"
        metrics = ", ".join(f"{k} {v:.4f}" for k, v in r.metrics.items())
        lines.append(f"| {i} | {r.seed} | {r.status} | {minutes} | {metrics} | "
                     f"{'pass' if r.checker_passed else 'FAIL'} |")
    return "\n".join(lines + ["", f"MLPerf score (olympic mean): {score.label}"])


def _write(output_dir, settings, division, precision, records, score, judgement):
    result_files.write(output_dir, MLPerfResults(
        settings=settings, division=division, precision=precision, score=score,
        environment=environment(), runs=list(records),
        rcp=dict(dataclasses.asdict(judgement), text=judgement.text()) if judgement else None),
        indent=1)
    text = table(records, score) + (f"\n\n{judgement.text()}" if judgement else "")
    write_text(os.path.join(output_dir, "results.md"), text + "\n")
    reporting.report([output_dir], os.path.join(output_dir, "report.html"),
                     f"MLPerf {settings.benchmark} ({division} division)")
    print(text)
