"""`mlbench launch`: a command as N local workers (and M parameter servers)."""
import argparse
import sys

from mlbench.cli.common import EXIT_OK, EXIT_TARGET


def launch_flags(parser):
    parser.add_argument("--num_workers", type=int, default=2, help="local worker processes.")
    parser.add_argument("--num_ps", type=int, default=0,
                        help="local parameter-server processes.")
    parser.add_argument("--launch_timeout_s", type=float, default=0,
                        help="stop everything after this many seconds (0 = never).")
    parser.add_argument("--emit", choices=("tfjob",),
                        help="print a Kubeflow TFJob manifest for this command instead of "
                             "running it (Kubernetes; the operator sets TF_CONFIG).")
    parser.add_argument("--image", default="mlbench:latest", help="--emit: container image.")
    parser.add_argument("--tfjob_name", default="mlbench", help="--emit: the TFJob's name.")
    parser.add_argument("rest", nargs=argparse.REMAINDER,
                        help="-- then the command each task runs (train|benchmark|mlperf ...).")


def run_launch(args):
    from mlbench.distribute.launch import command_line, launch
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    if args.emit:
        from mlbench.distribute import tfjob
        command = ["python", "-m", "mlbench", *rest] if rest[:1] and rest[0] in (
            "train", "benchmark", "mlperf") else command_line(rest)
        print(tfjob.to_yaml(tfjob.manifest(command, args.num_workers, args.num_ps,
                                           args.image, args.tfjob_name)), end="")
        return EXIT_OK
    code, failed, silent = launch(rest, args.num_workers, args.num_ps,
                                  args.launch_timeout_s or None)
    if silent:
        print(f"mlbench launch: {silent} {failed} failed waiting for it (exit code {code}); "
              "stopped the others. The chief's last checkpoint in model_dir stays: run "
              "the same command to resume.", file=sys.stderr)
    elif failed:
        what = ("did not reach its target" if code == EXIT_TARGET else
                f"was stopped by {_signal_name(code)} (exit code {code})"
                if _signal_name(code) else f"failed (exit code {code})")
        print(f"mlbench launch: {failed} {what}; stopped the others.", file=sys.stderr)
    return code


def _signal_name(code):
    """'SIGKILL' for exit code 137 (128 + the signal's number), else None."""
    import signal
    try:
        return signal.Signals(code - 128).name if code > 128 else None
    except ValueError:
        return None
