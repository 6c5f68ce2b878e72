"""`mlbench report` and `mlbench compare`: what runs wrote, on one page or judged."""
from mlbench.cli.common import EXIT_FAILED, EXIT_OK, add_boolean
from mlbench.files import write_json


def report_flags(parser):
    parser.add_argument("paths", nargs="+", metavar="DIR",
                        help="run directories: benchmark suites, benchmarks, train runs, MLPerf "
                             "run sets, inference sweeps (later benchmark ones are compared "
                             "with the first).")
    parser.add_argument("--output", default="report.html",
                        help="the HTML file; every figure shown also goes to <output>.json.")
    parser.add_argument("--title", help="the page's title.")


def run_report(args):
    from mlbench import reporting
    for path in reporting.report(args.paths, args.output, args.title):
        print(f"wrote {path}")
    return EXIT_OK


def compare_flags(parser):
    parser.add_argument("baseline", help="a benchmark's or suite's output directory, a train "
                        "run's model_dir, or an MLPerf run set's output directory.")
    parser.add_argument("candidate", help="the run to judge against the baseline.")
    parser.add_argument("--fail_on_regression", metavar="PCT",
                        help="exit 1 when a configuration is slower by more than PCT (e.g. "
                             "5%%) and beyond the noise band.")
    add_boolean(parser, "allow_incomparable", "with --fail_on_regression: a figure or "
                "configuration missing on a side is shown but does not fail (by default it "
                "exits 1: a gate must not pass on a missing or malformed result).")
    parser.add_argument("--json", help="write the comparison to this JSON file.")


def run_compare(args):
    from mlbench.reporting.compare import compare
    result = compare(args.baseline, args.candidate, args.fail_on_regression,
                     bool(args.allow_incomparable))
    print(result.table())
    if args.json:
        write_json(args.json, result.to_dict())
    return EXIT_FAILED if result.regressed else EXIT_OK
