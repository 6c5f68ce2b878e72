"""Command line: `mlbench train|evaluate|export|benchmark|mlperf|project|report|compare|data|
launch`.

The only module that reads flags.

Each subcommand has its own flags and `--help`; a flag another subcommand
owns is an error naming it. `mlbench train` takes every argument of
`mlbench.train` as a flag (generated from its signature, so the two never
drift apart), with gin files and bindings underneath: flags given explicitly
win over gin. Exit codes: 0 ok, 1 failed, 2 bad usage, 3 target not reached.
"""
import argparse
import glob
import inspect
import os
import sys
import traceback

from mlbench import cli_help  # text only
from mlbench.projector import platforms  # plain records: no TensorFlow
from mlbench.files import refuse_earlier_results, write_json  # no TensorFlow either
from mlbench.flag_values import boolean_or_auto, literal, mapping, names

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_TARGET = 0, 1, 2, 3
EXIT_INTERRUPTED = 130  # 128 + SIGINT; SIGTERM gives 143
EXIT_CODES = ("exit codes: 0 ok, 1 failed (including a diverged run), 2 bad usage or bad "
              "input, 3 target not reached, 130/143 interrupted by SIGINT/SIGTERM "
              "(checkpoint saved: the same command resumes)")
NOT_FLAGS = ("gin_files", "gin_bindings", "callbacks", "eval_data")  # not from a shell
SIMPLE_EXIT_CODES = "exit codes: 0 ok, 1 failed, 2 bad usage or bad input"
EPILOGS = {  # each subcommand's own exit codes; SIMPLE_EXIT_CODES for the others
    "train": EXIT_CODES, "mlperf": EXIT_CODES,
    "compare": "exit codes: 0 no regression, 1 a regression beyond the threshold (or a "
               "failure), 2 bad usage or bad input",
    "launch": "exit codes: 0 every task finished, else the failing task's own (1 failed, 3 "
              "target not reached), 124 --launch_timeout_s reached, 2 bad usage"}


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


def _parser_for(parameter):
    """(argparse type, metavar) from a parameter's annotation and default."""
    annotation = str(parameter.annotation)
    if "Dict" in annotation:
        return mapping, "K=V,.."
    if "Sequence[Any]" in annotation:
        return names, "A,B,.."
    if "Union[bool, str]" in annotation:
        return boolean_or_auto, "true|false|auto"
    if annotation.endswith("int]") or parameter.annotation is int:
        return int, "N"
    if annotation.endswith("float]") or parameter.annotation is float:
        return float, "X"
    return literal if parameter.name in ("data", "strategy") else str, None


def add_boolean(parser, name, help_text, dest=None):
    """`--name` / `--noname`, as absl and tf_cnn_benchmarks spell booleans."""
    dest = dest or name
    parser.add_argument(f"--{name}", dest=dest, action="store_const", const=True, help=help_text)
    parser.add_argument(f"--no{name}", dest=dest, action="store_const", const=False,
                        help=argparse.SUPPRESS)


def add_boolean_or_auto(parser, name, help_text, dest):
    """`--name` (true), `--name=true|false|auto` and `--noname`: both spellings, as absl
    and tf_cnn_benchmarks wrote booleans (`--xla_compile`, `--xla_compile=true`)."""
    parser.add_argument(f"--{name}", dest=dest, nargs="?", const=True, type=boolean_or_auto,
                        metavar="true|false|auto", help=help_text)
    parser.add_argument(f"--no{name}", dest=dest, action="store_const", const=False,
                        help=argparse.SUPPRESS)


def _signature_flags(parser, function, skip=(), aliases=None, help_texts=None):
    """One flag per argument of `function` (help from `help_texts`, written for the
    command line, else from its docstring; its default shown); `aliases` gives
    tf_cnn_benchmarks' flag names for the API's argument names."""
    docs, aliases = {**_arg_docs(function.__doc__), **(help_texts or {})}, aliases or {}
    for name, parameter in inspect.signature(function).parameters.items():
        if name in skip:
            continue
        flag, text = aliases.get(name, name), docs.get(name, "")
        if parameter.annotation is bool:
            add_boolean(parser, flag, f"{text} (--no{flag} to turn off)", dest=name)
        elif _parser_for(parameter)[0] is boolean_or_auto:
            default = f" (default {parameter.default!r})"
            add_boolean_or_auto(parser, flag, text + default, dest=name)
        else:
            kind, metavar = _parser_for(parameter)
            default = ("" if parameter.default in (None, inspect.Parameter.empty)
                       else f" (default {parameter.default!r})")
            parser.add_argument(f"--{flag}", dest=name, type=kind, metavar=metavar,
                                help=text + default)


def _given(args, function):
    """The flags given on the command line, as `function`'s keyword arguments (the
    others keep the signature's defaults: no default is written twice)."""
    return {name: getattr(args, name) for name in inspect.signature(function).parameters
            if getattr(args, name, None) is not None}


def _train_flags(parser):
    """One flag per argument of `mlbench.train` (help text from its docstring)."""
    from mlbench.api import train
    _signature_flags(parser, train, skip=NOT_FLAGS, help_texts=cli_help.TRAIN)
    add_boolean_or_auto(parser, "xla_compile", "tf_cnn_benchmarks' name for --jit_compile.",
                        dest="jit_compile")
    parser.add_argument("--display_every", dest="steps_per_loop", type=int, metavar="N",
                        help="tf_cnn_benchmarks' name: a progress line every N steps "
                             "(= --steps_per_loop).")
    parser.add_argument("--export_dir", help="write the trained model here: a SavedModel "
                        "with a serving signature (`mlbench export` does it later).")


def _arg_docs(docstring):
    """{argument: its description} from a Google-style Args section (continuation lines
    joined; the section ends at the next heading such as Returns)."""
    docs, current = {}, []
    for line in (docstring or "").splitlines():
        stripped = line.strip()
        if line.startswith("      ") and not line.startswith("        ") and ":" in stripped:
            names, text = stripped.split(":", 1)
            current = [n.strip() for n in names.split("/")]
            for name in current:
                docs[name] = text.strip()
        elif line.startswith("        ") and current:
            for name in current:
                docs[name] += " " + stripped
        elif stripped and not line.startswith("      "):
            current = []
    return docs


def _import_flags(parser):
    parser.add_argument("--import", dest="imports", action="append", default=[],
                        metavar="MODULE",
                        help="import your own module first (models/data it registers, "
                             "functions a gin file names as @module.function); repeatable.")


def _gin_flags(parser, required=False):
    parser.add_argument("--gin_file", action="append", default=[], required=required,
                        help="gin file (searched as given, then among mlbench's shipped "
                             "gin files); repeatable.")
    parser.add_argument("--gin_bindings", action="append", default=[],
                        help="gin binding, e.g. \"train.train_steps=100\"; repeatable.")


# --- subcommands --------------------------------------------------------------------

def _run_train(args):
    import mlbench
    given = {k: v for k, v in vars(args).items()
             if k not in ("gin_file", "gin_bindings", "command", "handler", "export_dir")
             and v is not None}
    _check_export_dir(args.export_dir)
    result = mlbench.train(gin_files=args.gin_file, gin_bindings=args.gin_bindings, **given)
    if args.export_dir:
        result.export(args.export_dir)
        print(f"exported to {args.export_dir}")
    target = result.config.get("target")
    return EXIT_OK if result.reached_target or not target else EXIT_TARGET


def _checkpoint_value(text):
    """--checkpoint: 'best', a step, or a path."""
    return int(text) if text.isdigit() else text


def _after_run_flags(parser, export=False):
    parser.add_argument("--model_dir", required=True, help="a train run's directory.")
    parser.add_argument("--checkpoint", type=_checkpoint_value, metavar="CKPT",
                        help="best (with keep_best), a step, or a checkpoint path "
                             "(default: the latest).")
    parser.add_argument("--data", type=literal, help=(
        "data for the model's input pipeline when the run's own were arrays (a name from "
        "`mlbench list data`)." if export else "data to evaluate on, a name from `mlbench "
        "list data` (default: the run's own eval data)."))
    if export:
        parser.add_argument("--export_dir", required=True,
                            help="a new directory for the SavedModel (serving_default).")
        return
    add_boolean(parser, "watch", "a sidecar evaluator: evaluate each new checkpoint once "
                "while a training job writes them; stop when the run ends.")
    parser.add_argument("--timeout", type=float, metavar="S",
                        help="with --watch: stop after S seconds at the latest.")


def _run_evaluate(args):
    from mlbench import evaluation
    if args.watch:
        if args.checkpoint is not None:
            raise ValueError("`--checkpoint` and `--watch` exclude each other: the sidecar "
                             "evaluates every checkpoint.")
        evaluation.watch(args.model_dir, data=args.data, timeout=args.timeout)
    else:
        if args.timeout is not None:
            raise ValueError("`--timeout` goes with `--watch`.")
        evaluation.evaluate(args.model_dir, data=args.data, checkpoint=args.checkpoint)
    return EXIT_OK


def _run_export(args):
    from mlbench import evaluation
    path = evaluation.export(args.model_dir, args.export_dir, checkpoint=args.checkpoint,
                             data=args.data)
    print(f"exported to {path}")
    return EXIT_OK


def _check_export_dir(path):
    if path and os.path.exists(path) and os.listdir(path):
        raise ValueError(f"`--export_dir` ({path!r}) is not empty; give a new directory.")


# tf_cnn_benchmarks' flag names for the API's argument names: flags and errors use them.
BENCHMARK_ALIASES = {"num_devices": "num_gpus", "all_reduce": "all_reduce_spec",
                     "jit_compile": "xla_compile"}


def _benchmark_flags(parser):
    """One flag per argument of `mlbench.benchmark`, under tf_cnn_benchmarks' names."""
    from mlbench.bench.bench import benchmark
    parser.add_argument("--suite", help="a suite under gin/benchmarks/ (e.g. dgx1_p100).")
    _signature_flags(parser, benchmark, skip=("clock", "verbose"), aliases=BENCHMARK_ALIASES,
                     help_texts=cli_help.BENCHMARK)
    add_boolean(parser, "use_fp16", "train in mixed_float16 (overrides --precision).")
    parser.add_argument("--output_dir", help="result.json (one model) or the suite's report.")
    parser.add_argument("--project", type=int, metavar="N",
                        help="add a projected column: this device x 2, 4 ... N over "
                             "--project_platform's interconnect (a projection, labelled so).")
    parser.add_argument("--project_platform", default=platforms.DEFAULT,
                        help="platform record for --project (dgx1_p100, dgx1_v100, dgx_a100, "
                             "dgx_h100, ...) or a JSON file.")
    _gin_flags(parser)


def _run_benchmark(args):
    if args.project is not None:  # checked before any step runs
        from mlbench.projector import platforms
        from mlbench.projector import scaling as projection
        projection.device_counts(args.project, args.num_devices or 1)
        platforms.get(args.project_platform)
    if args.suite:
        return _run_suite(args)
    if not args.model:
        raise ValueError("`--model` (or `--suite`) is required.")
    refuse_earlier_results(args.output_dir, ("result.json",), "--output_dir")
    from mlbench.bench.bench import benchmark
    given = _given(args, benchmark)
    if args.use_fp16:
        given["precision"] = "mixed_float16"
    if args.data_dir and "data" not in given:
        given["data"] = "real"
    result = benchmark(**given)
    if args.project:
        from mlbench.projector import attach, page
        print(attach.attach(result, args.project, args.project_platform,
                            page.page_suite).table())
    if args.output_dir:
        os.makedirs(args.output_dir, exist_ok=True)
        write_json(os.path.join(args.output_dir, "result.json"), result.to_dict(), indent=1)
    return EXIT_OK


def _run_suite(args):
    from mlbench.bench import suite
    overrides = {"data_dir": args.data_dir, "output_dir": args.output_dir,
                 "project": args.project, "project_platform": args.project_platform
                 if args.project else None}
    _, paths = suite.run_named(args.suite, args.gin_bindings,
                               **{k: v for k, v in overrides.items() if v})
    if paths:
        print("\n".join(f"wrote {p}" for p in paths.values()))
    return EXIT_OK


def _project_flags(parser):
    parser.add_argument("--suite", help="a benchmarks-page suite (e.g. dgx1_p100) to project "
                        "from its own base row (with --from=page).")
    parser.add_argument("--from", dest="source", default=None,
                        help="page (the suite's published figures) or a result.json of "
                             "`mlbench benchmark --output_dir`.")
    parser.add_argument("--model", help="model name (with --images_per_sec by hand).")
    parser.add_argument("--images_per_sec", type=float, help="measured images/sec.")
    parser.add_argument("--batch_size", type=int, help="per-device batch of that figure.")
    parser.add_argument("--devices", default="2,4,8", help="device counts, e.g. 2,4,8.")
    parser.add_argument("--platform", default="dgx1_p100",
                        help="a platform (`mlbench list platforms`) or a JSON record file "
                             "with the same fields.")
    parser.add_argument("--variable_update", help="parameter_server | replicated | "
                        "distributed_replicated (default: the result's strategy).")
    parser.add_argument("--local_parameter_device", default="cpu", help="cpu | gpu.")
    parser.add_argument("--json", help="write every figure shown to this JSON file.")
    add_boolean(parser, "validate", "the projector against the whole page: the held-out "
                "single-host cells and the distributed table, beside linear scaling, and "
                "two-point calibration on the 4- and 8-GPU cells.")
    _time_to_train_flags(parser)


def _time_to_train_flags(parser):
    add_boolean(parser, "to_quality", "also the minutes (and dollars) to the MLPerf quality "
                "target per device count: samples to converge from MLCommons' reference "
                "convergence points ÷ the throughput, plus the closed rules' evaluations.")
    parser.add_argument("--benchmark", choices=("resnet", "bert"),
                        help="--to_quality: whose convergence points (default: the model's).")
    parser.add_argument("--global_batch_size", type=int, help="--to_quality: the global batch "
                        "(default: per-device batch x devices x accumulation).")
    parser.add_argument("--gradient_accumulation_steps", type=int, default=1,
                        help="--to_quality: micro-batches per step (default 1).")
    parser.add_argument("--ruleset", default="1.0.0",
                        help="--to_quality: the MLPerf ruleset of the RCPs (default 1.0.0).")
    parser.add_argument("--rcp", help="--to_quality: a custom RCP file instead of MLCommons' "
                        "(e.g. gin/mlperf/cpu/rcps_resnet_digits.json).")
    parser.add_argument("--train_examples", type=int, help="--to_quality: images in one "
                        "epoch (default ImageNet's 1,281,167).")
    parser.add_argument("--eval_every_epochs", type=float, help="--to_quality: your config's "
                        "eval cadence (default the closed rules': ResNet 4 epochs).")
    parser.add_argument("--eval_examples", type=int, help="--to_quality: examples in one "
                        "eval (default the closed rules': ResNet 50,000, BERT 10,000).")
    parser.add_argument("--forward_from", help="--to_quality: a result.json of `mlbench "
                        "benchmark --forward_only` (the eval rate; default 3 x training).")
    parser.add_argument("--price_per_device_hour", type=float, help="--to_quality: dollars "
                        "per device-hour (default: the platform record's price, if any).")
    parser.add_argument("--calibrate", metavar="ONE,TWO", help="project from your own 1- and "
                        "2-device result.json files (two-point calibration).")
    parser.add_argument("--calibration_mode", choices=("derate", "bandwidth"),
                        default="derate", help="--calibrate: hold the 2-device efficiency "
                        "(derate, default) or charge the loss to the links (bandwidth).")


def _run_project(args):
    from mlbench.projector import calibration
    from mlbench.projector import page
    from mlbench.projector import validation as page_validation
    if args.validate:
        text, output = page_validation.validation_report(page.page_suite)
        calibrated = calibration.validate_page(page.page_suite)
        print(text + "\n" + calibration.format_validation(calibrated))
        output = dict(output, two_point_calibration={k: v for k, v in calibrated.items()
                                                     if k != "cells"})
    elif args.suite or args.source == "page":
        if not (args.suite and args.source == "page"):
            raise ValueError("`--suite` goes with `--from=page` (project a page table from "
                             "its own base row).")
        text, output = page_validation.page_report(args.suite, page.page_suite)
        print(text)
    else:
        run = _projected_run(args)
        print(run.text())
        output = run.to_dict()
    if args.json:
        write_json(args.json, output)
    return EXIT_OK


def _projected_run(args):
    from mlbench.projector.time_to_train import project
    devices = [int(d) for d in args.devices.split(",") if d.strip()]
    calibrate = args.calibrate.split(",") if args.calibrate else None
    if calibrate is not None and len(calibrate) != 2:
        raise ValueError(f"`--calibrate` ({args.calibrate!r}) must be two result.json files: "
                         "the 1-device one, a comma, the 2-device one.")
    by_hand = {k: v for k, v in dict(model=args.model, images_per_sec=args.images_per_sec,
                                      batch_size=args.batch_size,
                                      variable_update=args.variable_update).items() if v}
    return project(None if calibrate else args.source, devices=devices,
                   platform=args.platform, to_quality=args.to_quality, calibrate=calibrate,
                   calibration_mode=args.calibration_mode, benchmark=args.benchmark,
                   gradient_accumulation_steps=args.gradient_accumulation_steps,
                   global_batch_size=args.global_batch_size, ruleset=args.ruleset,
                   rcp_path=args.rcp, train_examples=args.train_examples,
                   forward_result=args.forward_from,
                   price_per_device_hour=args.price_per_device_hour,
                   eval_every_epochs=args.eval_every_epochs, eval_examples=args.eval_examples,
                   local_parameter_device=args.local_parameter_device, **by_hand)


def _report_flags(parser):
    parser.add_argument("paths", nargs="+", metavar="DIR",
                        help="run directories: benchmark suites, benchmarks, train runs, MLPerf "
                             "run sets (later benchmark ones are compared with the first).")
    parser.add_argument("--output", default="report.html",
                        help="the HTML file; every figure shown also goes to <output>.json.")
    parser.add_argument("--title", help="the page's title.")


def _run_report(args):
    from mlbench import reporting
    for path in reporting.report(args.paths, args.output, args.title):
        print(f"wrote {path}")
    return EXIT_OK


def _compare_flags(parser):
    parser.add_argument("baseline", help="a benchmark's or suite's output directory, a train "
                        "run's model_dir, or an MLPerf run set's output directory.")
    parser.add_argument("candidate", help="the run to judge against the baseline.")
    parser.add_argument("--fail_on_regression", metavar="PCT",
                        help="exit 1 when a configuration is slower by more than PCT (e.g. "
                             "5%%) and beyond the noise band.")
    parser.add_argument("--json", help="write the comparison to this JSON file.")


def _run_compare(args):
    from mlbench.reporting.compare import compare
    result = compare(args.baseline, args.candidate, args.fail_on_regression)
    print(result.table())
    if args.json:
        write_json(args.json, result.to_dict())
    return EXIT_FAILED if result.regressed else EXIT_OK


def _mlperf_flags(parser):
    _gin_flags(parser)
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


def _run_mlperf(args):
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


def _data_flags(parser):
    parser.add_argument("kind", choices=("imagenet", "bert"),
                        help="imagenet: JPEG TFRecords of bundled real images; bert: MLPerf-"
                             "format pretraining records of the standard library's text.")
    parser.add_argument("--output_dir", required=True, help="where the records go.")
    parser.add_argument("--source", default="digits", choices=("digits", "mnist", "photos"),
                        help="imagenet: which bundled real images.")
    parser.add_argument("--image_size", type=int, default=32, help="imagenet: image side.")
    parser.add_argument("--num_shards", type=int, default=2, help="train shards.")
    parser.add_argument("--seq_length", type=int, default=128, help="bert: tokens per sequence.")
    parser.add_argument("--max_predictions", type=int, default=20,
                        help="bert: masked tokens per sequence.")
    parser.add_argument("--wordpiece_vocab_size", type=int, default=2000,
                        help="bert: target vocabulary size.")
    parser.add_argument("--duplicates", type=int, default=5,
                        help="bert: dupe factor (maskings per text).")


def _run_data(args):
    if args.kind == "imagenet":
        from mlbench.data.writers import write_bundled_imagenet
        train, evals = write_bundled_imagenet(args.output_dir, args.source, args.image_size,
                                              args.num_shards)
        print(f"wrote {len(train)} train and {len(evals)} validation shards to "
              f"{args.output_dir}")
        return EXIT_OK
    from mlbench.data.bert_writer import write_bert_pretraining
    out = write_bert_pretraining(args.output_dir, vocab_size=args.wordpiece_vocab_size,
                                 seq_length=args.seq_length, max_predictions=args.max_predictions,
                                 dupe_factor=args.duplicates, num_shards=args.num_shards)
    print(f"wrote {out['counts']} instances and {out['vocab']} to {args.output_dir}")
    return EXIT_OK


def _launch_flags(parser):
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


def _run_launch(args):
    from mlbench.launch import command_line, launch
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
                f"failed (exit code {code})")
        print(f"mlbench launch: {failed} {what}; stopped the others.", file=sys.stderr)
    return code


def _host_flags(parser):
    """tf_cnn_benchmarks' cluster flags: build TF_CONFIG for this process."""
    parser.add_argument("--worker_hosts", help="host:port,... of every worker.")
    parser.add_argument("--ps_hosts", help="host:port,... of every parameter server.")
    parser.add_argument("--controller_host",
                        help="host:port of the chief (with --ps_hosts: the coordinator).")
    parser.add_argument("--task_index", type=int, default=0, help="this task's index.")
    parser.add_argument("--job_name", default="worker", help="worker | ps | chief.")


LISTS = ("models", "data", "suites", "platforms", "configs")


def _list_flags(parser):
    parser.add_argument("what", choices=LISTS, help="what to list: " + ", ".join(LISTS) + ".")


def _run_list(args):
    """Names a flag takes, one per line (so no one learns them from an error message)."""
    if args.what == "platforms":
        for name in sorted(platforms.RECORDS):
            print(f"{name}\t{platforms.RECORDS[name]['name']}")
        return EXIT_OK
    if args.what in ("suites", "configs"):
        from mlbench.config import shipped_gin_root
        root = shipped_gin_root()
        pattern = "benchmarks/*.gin" if args.what == "suites" else "**/*.gin"
        for path in sorted(glob.glob(os.path.join(root, pattern), recursive=True)):
            relative = os.path.relpath(path, root)
            print(os.path.basename(path)[:-4] if args.what == "suites" else relative)
        return EXIT_OK
    import mlbench
    print("\n".join(mlbench.models.list_models() if args.what == "models"
                    else mlbench.data.names()))
    return EXIT_OK


COMMANDS = {
    "train": ("train a model (every mlbench.train argument is a flag; gin underneath)",
              lambda p: (_gin_flags(p), _import_flags(p), _train_flags(p), _host_flags(p)),
              _run_train),
    "evaluate": ("evaluate a train run's checkpoint (or, with --watch, each new one as a "
                 "sidecar) on its eval data", lambda p: (_after_run_flags(p), _import_flags(p)),
                 _run_evaluate),
    "export": ("write a train run's checkpoint as a SavedModel with a serving signature",
               lambda p: (_after_run_flags(p, export=True), _import_flags(p)), _run_export),
    "benchmark": ("images/sec the tf_cnn_benchmarks way, one model or a suite",
                  lambda p: (_benchmark_flags(p), _import_flags(p), _host_flags(p)),
                  _run_benchmark),
    "mlperf": ("MLPerf time-to-quality runs, compliance-checked logs and the olympic score",
               lambda p: (_mlperf_flags(p), _import_flags(p)), _run_mlperf),
    "project": ("images/sec on N devices or hosts projected from one measurement (and the "
                "page's tables as its validation)", _project_flags, _run_project),
    "report": ("one self-contained HTML page (and its JSON figures) over run directories",
               _report_flags, _run_report),
    "compare": ("candidate vs baseline (benchmarks, train runs or MLPerf run sets): ratio and "
                "a verdict from the runs' own noise", _compare_flags, _run_compare),
    "data": ("write ImageNet- or BERT-format TFRecords from bundled real data",
             _data_flags, _run_data),
    "list": ("the names flags take: models, data, suites, platforms, configs (gin files)",
             _list_flags, _run_list),
    "launch": ("run a command as N local workers (and M parameter servers) with TF_CONFIG",
               _launch_flags, _run_launch),
}


def build_parser(only=None):
    """The parser; with `only`, the flags of that subcommand alone (the others keep their
    summaries): `train`'s flags come from `mlbench.train`, which loads TensorFlow, so
    `mlbench --help` and other commands do not build them."""
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


def _tf_config_from_flags(args):
    """--worker_hosts/--task_index (--ps_hosts) → TF_CONFIG, before TensorFlow starts."""
    if not getattr(args, "worker_hosts", None):
        return
    from mlbench.distribute.cluster import tf_config_from_hosts
    ps = args.ps_hosts.split(",") if args.ps_hosts else ()
    os.environ["TF_CONFIG"] = tf_config_from_hosts(args.worker_hosts.split(","),
                                                   args.task_index, ps, args.job_name,
                                                   args.controller_host)


# Errors name the flag typed (`num_devices` (--num_gpus)).
FLAG_ALIASES = {name: f"--{flag}" for name, flag in BENCHMARK_ALIASES.items()}


def _naming_flags(message, argv):
    for argument, flag in FLAG_ALIASES.items():
        if f"`{argument}`" in message and any(a.startswith(flag) for a in argv):
            message = message.replace(f"`{argument}`", f"`{argument}` ({flag})", 1)
    return message


def _import_modules(modules):
    if modules:
        from mlbench.config import import_user_module
        for name in modules:
            import_user_module(name)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--version"]:  # answered before TensorFlow loads for the parser
        from mlbench.version import __version__
        print(f"mlbench {__version__}")
        return EXIT_OK
    # before the parser: `train`'s flags come from mlbench.train (imports TF)
    _quiet_tensorflow(debug=argv[:1] == ["--debug"])
    command = next((a for a in argv if not a.startswith("-")), None)
    return _main(build_parser(only=command if command in COMMANDS else "").parse_args(argv),
                 argv)


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


def _traceback_if(debug):
    if debug:
        traceback.print_exc()


def run_main():
    sys.exit(main())
