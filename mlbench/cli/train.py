"""`mlbench train`, `evaluate` and `export`: a run and what comes after it."""
import argparse
import os

from mlbench.cli import help_text
from mlbench.cli.common import (EXIT_OK, EXIT_TARGET, add_boolean, print_dry_run,
                                signature_flags)
from mlbench.cli.values import literal


NOT_FLAGS = ("gin_files", "gin_bindings", "callbacks", "eval_data")  # not from a shell


def train_flags(parser):
    """One flag per argument of `mlbench.train` (help text from `help_text.TRAIN`)."""
    from mlbench.trainer.api import train
    signature_flags(parser, train, help_text.TRAIN, skip=NOT_FLAGS)
    parser.add_argument("--display_every", type=_not_in_train, help=argparse.SUPPRESS)
    parser.add_argument("--export_dir", help="write the trained model here: a SavedModel "
                        "with a serving signature (`mlbench export` does it later).")
    add_boolean(parser, "dry_run", "check everything (names, data, batch split, steps), "
                "print what would run, and run nothing; nothing is written.")


def _not_in_train(text):
    """`--display_every` is benchmark's (a Step / Img/sec line every N timed steps); train
    prints one line per loop of --steps_per_loop steps, which also sets how often the
    host checks the loss: one name, one meaning."""
    raise argparse.ArgumentTypeError(
        f"({text!r}) is `mlbench benchmark`'s; train prints one progress line per block "
        "of steps: give --steps_per_loop=N (it also sets how often the loss is checked).")


def run_train(args):
    import mlbench
    given = {k: v for k, v in vars(args).items()
             if k not in ("gin_file", "gin_bindings", "command", "handler", "export_dir",
                          "dry_run") and v is not None}
    _check_export_dir(args.export_dir)
    if args.dry_run:
        from mlbench.trainer.api import plan_train
        plan = plan_train(args.gin_file, args.gin_bindings, **given)
        return print_dry_run(plan.summary())
    result = mlbench.train(gin_files=args.gin_file, gin_bindings=args.gin_bindings, **given)
    if args.export_dir:
        result.export(args.export_dir)
        print(f"exported to {args.export_dir}")
    target = result.arguments.get("target")
    return EXIT_OK if result.reached_target or not target else EXIT_TARGET


def _checkpoint_value(text):
    """--checkpoint: 'best', a step, or a path."""
    return int(text) if text.isdigit() else text


def after_run_flags(parser, export=False):
    parser.add_argument("--model_dir", required=True, help="a train run's directory.")
    parser.add_argument("--checkpoint", type=_checkpoint_value, metavar="CKPT",
                        help="best (with keep_best), a step, or a checkpoint path "
                             "(default: the latest).")
    parser.add_argument("--data", type=literal, help=(
        "data for the model's input pipeline when the run's own were arrays and its record "
        "keeps no input spec (a name from `mlbench list data`)." if export else "data to "
        "evaluate on: a name from `mlbench list data`, or an .npz file of arrays x and y "
        "(default: the run's own eval data)."))
    if export:
        parser.add_argument("--export_dir", required=True,
                            help="a new directory for the SavedModel (serving_default).")
        parser.add_argument("--precision", default="auto",
                            help="the served model's precision: auto (as trained), float32, "
                                 "mixed_bfloat16 or mixed_float16.")
        return
    add_boolean(parser, "watch", "a sidecar evaluator: evaluate each new checkpoint once "
                "while a training job writes them; stop when the run ends.")
    parser.add_argument("--timeout", type=float, metavar="S",
                        help="with --watch: stop after S seconds at the latest.")


def run_evaluate(args):
    from mlbench.trainer import evaluation
    if args.watch:
        if args.checkpoint is not None:
            raise ValueError("`--checkpoint` and `--watch` exclude each other: the sidecar "
                             "evaluates every checkpoint.")
        evaluation.watch(args.model_dir, data=_data(args.data), timeout=args.timeout)
    else:
        if args.timeout is not None:
            raise ValueError("`--timeout` goes with `--watch`.")
        evaluation.evaluate(args.model_dir, data=_data(args.data), checkpoint=args.checkpoint)
    return EXIT_OK


def _data(value):
    """--data: a data name, or an .npz file of arrays `x`, `y` (and `sample_weight`): what
    a run trained on arrays is evaluated on from the shell."""
    if not isinstance(value, str) or not value.endswith(".npz"):
        return value
    import numpy as np
    if not os.path.isfile(value):
        raise ValueError(f"`--data` ({value!r}) is no file; expected an .npz of arrays x "
                         "and y (numpy.savez('eval.npz', x=x, y=y)).")
    arrays = np.load(value)
    missing = [k for k in ("x", "y") if k not in arrays.files]
    if missing:
        raise ValueError(f"`--data` ({value!r}) holds {arrays.files}, not {missing}; expected "
                         "arrays x and y (and sample_weight), as numpy.savez('eval.npz', "
                         "x=x, y=y) writes them.")
    return tuple(arrays[k] for k in ("x", "y", "sample_weight") if k in arrays.files)


def run_export(args):
    from mlbench.bench.infer import served_gap
    from mlbench.trainer import evaluation
    _check_export_dir(args.export_dir)  # before anything is loaded
    precision = None if args.precision == "auto" else args.precision
    loaded = evaluation.load(args.model_dir, args.checkpoint, data=args.data,
                             precision=precision)
    path = loaded.export(args.export_dir)
    print(f"exported to {path}")
    gap = served_gap(loaded.model, path)
    if gap is not None:
        print(f"served outputs differ from the in-process model's by up to {gap:.3g} on 4 "
              f"random inputs (precision {precision or loaded.ran.get('precision', 'as trained')}"
              ": the served graph runs other kernels, so round-off)")
    return EXIT_OK


def _check_export_dir(path):
    if path and os.path.exists(path) and os.listdir(path):
        raise ValueError(f"`--export_dir` ({path!r}) is not empty; give a new directory.")
