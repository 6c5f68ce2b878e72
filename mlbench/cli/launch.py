"""`mlbench launch`: a command as N local workers (and M parameter servers)."""
import argparse
import sys

from mlbench.cli.common import EXIT_OK, EXIT_TARGET
from mlbench.cli.values import boolean_or_auto


def launch_flags(parser):
    parser.add_argument("--num_workers", type=int, default=2, help="local worker processes.")
    parser.add_argument("--num_ps", type=int, default=0,
                        help="local parameter-server processes.")
    parser.add_argument("--launch_timeout_s", type=float, default=0,
                        help="stop everything after this many seconds (0 = never).")
    parser.add_argument("--emit", choices=("jobset", "trainjob", "tfjob"),
                        help="print Kubernetes manifests for this command instead of "
                             "running it: jobset (a JobSet, jobset.x-k8s.io), trainjob (a "
                             "Kubeflow Trainer v2 TrainJob and its ClusterTrainingRuntime) "
                             "or tfjob (Trainer v1's TFJob, a retired operator); each pod "
                             "builds its TF_CONFIG itself (--cluster=jobset; tfjob: the "
                             "operator sets it). Checked against the CRDs' schemas.")
    parser.add_argument("--image", help="--emit: the container image with mlbench installed "
                                         "(required), e.g. registry/mlbench:0.2.")
    parser.add_argument("--manifest_name", "--tfjob_name", dest="manifest_name",
                        default="mlbench",
                        help="--emit: the job's name (a DNS label; prefixes pod hostnames).")
    parser.add_argument("--cpus", help="--emit: CPUs per pod (a quantity: 4, 500m).")
    parser.add_argument("--memory", help="--emit: memory per pod (a quantity: 16Gi).")
    parser.add_argument("--gpus", type=int, help="--emit: GPUs per pod (nvidia.com/gpu).")
    parser.add_argument("--volume_claim",
                        help="--emit: a PersistentVolumeClaim mounted at /mlbench in every "
                             "pod: give --model_dir under it, so a restarted job resumes "
                             "from the chief's checkpoint.")
    parser.add_argument("--max_restarts", type=int, default=3,
                        help="--emit=jobset: whole-job restarts after a failure (each "
                             "resumes from the last checkpoint).")
    parser.add_argument("--isolate_network", nargs="?", const=True, default=True,
                        type=_true_or_false, metavar="true|false",
                        help="run the tasks in a private network namespace (default "
                             "true): TensorFlow's servers listen on every interface and "
                             "run what they are sent, so no other host may reach them; "
                             "false for data on gs:// or s3:// (docs/security.md).")
    parser.add_argument("rest", nargs=argparse.REMAINDER,
                        help="-- then the command each task runs (train|benchmark|mlperf ...).")


def run_launch(args):
    from mlbench.distribute.launch import command_line, launch
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    if args.emit:
        command = ["python", "-m", "mlbench", *rest] if rest[:1] and rest[0] in (
            "train", "benchmark", "mlperf") else command_line(rest)
        print(_manifests(args, command), end="")
        return EXIT_OK
    code = _in_private_network(args, rest)
    if code is not None:
        return code  # the launch ran again inside its namespace: its exit code
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


def _manifests(args, command):
    """The manifests of --emit as YAML documents, followed by the NetworkPolicy that admits
    traffic to the job's pods only from each other; each checked against its schema."""
    from mlbench.distribute import jobset, tfjob
    if not args.image:
        raise ValueError("`--image` is needed with --emit: the container image the pods run, "
                         "with mlbench installed (e.g. --image=registry/mlbench:0.2).")
    sizes = dict(cpus=args.cpus, memory=args.memory, gpus=args.gpus,
                 volume_claim=args.volume_claim)
    if args.emit == "jobset":
        documents = [jobset.jobset(command, args.num_workers, args.num_ps, args.image,
                                   args.manifest_name, max_restarts=args.max_restarts, **sizes)]
    elif args.emit == "trainjob":
        documents = jobset.trainjob(command, args.num_workers, args.num_ps, args.image,
                                    args.manifest_name, **sizes)
    else:
        print("mlbench launch: --emit=tfjob targets Kubeflow Trainer v1's TFJob, a retiring "
              "operator; --emit=jobset or --emit=trainjob target what replaces it.",
              file=sys.stderr)
        documents = [tfjob.manifest(command, args.num_workers, args.num_ps, args.image,
                                    args.manifest_name)]
    from mlbench.version import __version__
    return f"# mlbench {__version__} launch --emit={args.emit}\n" + tfjob.to_yaml(*documents, tfjob.network_policy(args.manifest_name))


def _true_or_false(text):
    value = boolean_or_auto(text)
    if value == "auto":
        raise argparse.ArgumentTypeError(f"({text!r}) must be true or false.")
    return value


def _in_private_network(args, rest):
    """Outside a private network namespace, when asked and possible: this launch run again
    inside one, its exit code. Inside one: its loopback brought up, None (launch here).
    Else None, with a warning: the servers listen on every interface."""
    from mlbench.distribute import isolation
    if isolation.inside():
        isolation.loopback_up()
        return None
    if args.isolate_network and isolation.available():
        print("mlbench launch: tasks run in a private network namespace (127.0.0.1 "
              "only, unreachable from other hosts)", flush=True)
        return isolation.run_inside(isolation.relaunch_command(
            args.num_workers, args.num_ps, args.launch_timeout_s, rest))
    why = ("--isolate_network=false" if not args.isolate_network else
           "this machine allows no unprivileged network namespace (`unshare --user --net`)")
    print(f"mlbench launch: warning: {why}: TensorFlow's servers listen on every interface "
          "and run the graphs they are sent; keep this machine's network private "
          "(docs/security.md).", file=sys.stderr, flush=True)
    return None


def _signal_name(code):
    """'SIGKILL' for exit code 137 (128 + the signal's number), else None."""
    import signal
    try:
        return signal.Signals(code - 128).name if code > 128 else None
    except ValueError:
        return None
