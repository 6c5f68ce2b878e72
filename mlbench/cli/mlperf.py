"""`mlbench mlperf`: time-to-quality runs, checked logs, the score and the package."""
import sys

from mlbench.cli.common import EXIT_FAILED, EXIT_OK, EXIT_TARGET, add_boolean, gin_flags


def mlperf_flags(parser):
    gin_flags(parser)
    parser.add_argument("--runs", type=int, default=1, help="runs (seeds seed, seed+1, ...).")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first run.")
    parser.add_argument("--output_dir", default="runs/mlperf",
                        help="run_<i>/ (log, checker verdict, model) per run, results.md/json. "
                             "Must not hold earlier runs.")
    add_boolean(parser, "verbose", "print each run's progress lines.")
    parser.add_argument("--package_dir", help="also write the MLCommons submission layout "
                        "here (with --submitter and --system) and check it.")
    parser.add_argument("--submitter", help="the submitting organisation (package folder, "
                        "the logs' submission_org).")
    parser.add_argument("--system", help="the system's id (systems/<id>.json, the logs' "
                        "submission_platform).")
    parser.add_argument("--check_package", metavar="DIR", help="only check a package: "
                        "package_checker's verdict and the result summarizer's score.")
    add_boolean(parser, "dry_run", "resolve the config (data checked, closed rules, RCP "
                "coverage), print what would run, and run nothing; missing bundled data is "
                "planned against a temporary copy, not written.")
    parser.add_argument("--rcp", metavar="FILE", help="judge the runs' convergence against "
                        "this reference convergence point file (rcp_checker --custom_rcps, "
                        "plus the mirrored 'converged slower' bound); exit 3 when slower.")
    parser.add_argument("--write_rcp", metavar="FILE", help="write the runs' epochs (BERT: "
                        "samples) to converge as an RCP file (>= 10 runs).")


def run_mlperf(args):
    from mlbench.mlperf import package, run
    if args.check_package:
        accepted = run.check_packages(package.package_roots(args.check_package))
        return EXIT_OK if accepted else EXIT_FAILED
    if not args.gin_file:
        raise ValueError("`--gin_file` is required (or `--check_package=DIR`).")
    outcome = run.submit(args.gin_file, args.gin_bindings, args.runs, args.seed,
                         args.output_dir, bool(args.verbose), args.rcp, args.write_rcp,
                         _submission(args), " ".join(["mlbench", "mlperf"] + sys.argv[2:]),
                         bool(args.dry_run))
    if outcome is None:  # a dry run
        return EXIT_OK
    if outcome.package_accepted is False:
        return EXIT_FAILED
    return EXIT_OK if outcome.converged else EXIT_TARGET


def _submission(args):
    """--package_dir, --submitter and --system, all three or none."""
    given = (args.package_dir, args.submitter, args.system)
    if not any(given):
        return None
    if not all(given):
        raise ValueError("`--package_dir`, `--submitter` and `--system` go together.")
    from mlbench.mlperf.run import Submission
    return Submission(*given)
