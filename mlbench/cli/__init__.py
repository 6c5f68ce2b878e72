"""Command line: `mlbench train|evaluate|export|benchmark|mlperf|project|report|compare|data|
list|launch`.

The only package that reads flags: one module per subcommand (`train` also holds
`evaluate` and `export`, `results` holds `report` and `compare`), `common` for what
they share, `help_text` for help written for the shell, `values` for the parsers of
flag values.

Each subcommand has its own flags, `--help` and exit codes; a flag another
subcommand owns is an error naming it. `mlbench train` takes every argument of
`mlbench.train` as a flag (from its signature, so the two never drift apart), with
gin files and bindings underneath: flags given explicitly win over gin.
`mlbench --help`, `--version` and the subcommands that need no model import no
TensorFlow.
"""
import glob
import os
import sys
import traceback

from mlbench.cli import (benchmark, data, infer, launch, listing, mlperf, project, results,
                         train)
from mlbench.cli.common import (ALIASES, EXIT_CODES, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK,
                                EXIT_TARGET, EXIT_USAGE, SIMPLE_EXIT_CODES, gin_flags,
                                host_flags, import_flags)

__all__ = ["main", "run_main", "build_parser", "COMMANDS", "EXIT_OK", "EXIT_FAILED",
           "EXIT_USAGE", "EXIT_TARGET", "EXIT_INTERRUPTED"]


EPILOGS = {  # each subcommand's own exit codes; SIMPLE_EXIT_CODES for the others
    "train": EXIT_CODES, "mlperf": EXIT_CODES,
    "compare": "exit codes: 0 no regression, 1 a regression beyond the threshold (or a "
               "failure), 2 bad usage or bad input",
    "launch": "exit codes: 0 every task finished, else the failing task's own (1 failed, 3 "
              "target not reached), 124 --launch_timeout_s reached, 2 bad usage"}


COMMANDS = {
    "train": ("train a model (every mlbench.train argument is a flag; gin underneath)",
              lambda p: (gin_flags(p), import_flags(p), train.train_flags(p), host_flags(p)),
              train.run_train),
    "evaluate": ("evaluate a train run's checkpoint (or, with --watch, each new one as a "
                 "sidecar) on its eval data",
                 lambda p: (train.after_run_flags(p), import_flags(p)), train.run_evaluate),
    "export": ("write a train run's checkpoint as a SavedModel with a serving signature",
               lambda p: (train.after_run_flags(p, export=True), import_flags(p)),
               train.run_export),
    "benchmark": ("images/sec the tf_cnn_benchmarks way, one model or a suite",
                  lambda p: (benchmark.benchmark_flags(p), import_flags(p), host_flags(p)),
                  benchmark.run_benchmark),
    "infer": ("inference latency (nearest-rank percentiles) and throughput over a batch "
              "sweep", infer.infer_flags, infer.run_infer),
    "mlperf": ("MLPerf time-to-quality runs, compliance-checked logs and the olympic score",
               lambda p: (mlperf.mlperf_flags(p), import_flags(p)), mlperf.run_mlperf),
    "project": ("images/sec, minutes and dollars on N devices or hosts projected from one "
                "measurement (and the page's tables as its validation)",
                project.project_flags, project.run_project),
    "report": ("one self-contained HTML page (and its JSON figures) over run directories",
               results.report_flags, results.run_report),
    "compare": ("candidate vs baseline (benchmarks, train runs or MLPerf run sets): ratio and "
                "a verdict from the runs' own noise", results.compare_flags, results.run_compare),
    "data": ("write ImageNet- or BERT-format TFRecords from bundled real data",
             data.data_flags, data.run_data),
    "list": ("the names flags take: models, data, suites, platforms, configs (gin files)",
             listing.list_flags, listing.run_list),
    "launch": ("run a command as N local workers (and M parameter servers) with TF_CONFIG",
               launch.launch_flags, launch.run_launch),
}


def build_parser(only=None):
    """The parser; with `only`, the flags of that subcommand alone (the others keep their
    summaries): `train`'s flags come from `mlbench.train`, which loads TensorFlow, so
    `mlbench --help` and other commands do not build them."""
    import argparse
    from mlbench.version import __version__
    parser = argparse.ArgumentParser(
        prog="mlbench", description="Train and benchmark the classic CNNs and BERT on TF2.",
        epilog=EXIT_CODES)
    parser.add_argument("--version", action="version", version=f"mlbench {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="on failure, print the traceback; keep TensorFlow's own log.")
    sub = parser.add_subparsers(dest="command", metavar="{" + ",".join(COMMANDS) + "}",
                                required=True)
    for name, (summary, add_flags, handler) in COMMANDS.items():
        epilog = EPILOGS.get(name, SIMPLE_EXIT_CODES)
        child = sub.add_parser(name, help=summary, description=summary, epilog=epilog)
        if only is None or name == only:
            add_flags(child)
        child.set_defaults(handler=handler)
    return parser


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--version"]:  # answered before TensorFlow loads for the parser
        from mlbench.version import __version__
        print(f"mlbench {__version__}")
        return EXIT_OK
    # before the parser: `train`'s flags come from mlbench.train (imports TF)
    _quiet_tensorflow(debug="--debug" in argv[:1])
    command = next((a for a in argv if not a.startswith("-")), None)
    return _main(build_parser(only=command if command in COMMANDS else "").parse_args(argv),
                 argv)


def _quiet_tensorflow(debug=False):
    """No C++ INFO/WARNING lines; on machines without an NVIDIA device, no cuInit error
    (`--debug` keeps TensorFlow's own log)."""
    import mlbench
    if debug:
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"
        return
    if "TF_CPP_MIN_LOG_LEVEL" not in os.environ or getattr(mlbench, "LOG_LEVEL_DEFAULTED",
                                                          False):
        no_gpu = not glob.glob("/dev/nvidia[0-9]*")
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3" if no_gpu else "2"
    from absl import logging as absl_logging
    absl_logging.set_verbosity(absl_logging.WARNING)


def _main(args, argv):
    debug = vars(args).pop("debug", False)  # the CLI's own: no handler takes it
    try:
        _tf_config_from_flags(args)
        _import_modules(vars(args).pop("imports", ()))
        handler = args.handler
        for name in ("worker_hosts", "ps_hosts", "task_index", "job_name", "controller_host"):
            vars(args).pop(name, None)
        return handler(args)
    except KeyboardInterrupt as e:  # RunInterrupted: saved and said so; else nothing started
        code = getattr(e, "exit_code", EXIT_INTERRUPTED)
        if not hasattr(e, "exit_code"):
            print(f"mlbench {args.command}: interrupted before training started; nothing "
                  "was saved", file=sys.stderr)
        return code
    except (ValueError, TypeError) as e:
        _traceback_if(debug)
        message = _naming_flags(str(e), argv)
        print(f"mlbench {args.command}: error: {message}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as e:  # noqa: BLE001  (a failed run: say what, exit 1)
        _traceback_if(debug)
        print(f"mlbench {args.command}: failed: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_FAILED


def _tf_config_from_flags(args):
    """--worker_hosts/--task_index (--ps_hosts) → TF_CONFIG, before TensorFlow starts."""
    if not getattr(args, "worker_hosts", None):
        return
    from mlbench.distribute.cluster import is_chief, off_this_machine, tf_config_from_hosts
    ps = args.ps_hosts.split(",") if args.ps_hosts else ()
    os.environ["TF_CONFIG"] = tf_config_from_hosts(args.worker_hosts.split(","),
                                                   args.task_index, ps, args.job_name,
                                                   args.controller_host)
    exposed = off_this_machine(os.environ["TF_CONFIG"])
    if exposed and is_chief():  # once for the job: the chief says it
        print(f"mlbench {args.command}: warning: TensorFlow's servers ({', '.join(exposed)}) "
              "accept connections from any host and run the graphs they are sent; the "
              "network between them must be private to the job (docs/security.md).",
              file=sys.stderr)


def _naming_flags(message, argv):
    """Errors name the flag typed: `num_devices` (--num_gpus)."""
    for argument, flag in ALIASES.items():
        if f"`{argument}`" in message and any(a.startswith(f"--{flag}") for a in argv):
            message = message.replace(f"`{argument}`", f"`{argument}` (--{flag})", 1)
    return message


def _import_modules(modules):
    if modules:
        from mlbench.config import import_user_module
        for name in modules:
            import_user_module(name)


def _traceback_if(debug):
    if debug:
        traceback.print_exc()


def run_main():
    sys.exit(main())
