"""`mlbench project`: throughput, time and cost on devices not measured (and the
projector's validation on the benchmarks page)."""
from mlbench.cli.common import EXIT_OK, add_boolean
from mlbench.files import write_json
from mlbench.mlperf import benchmarks  # plain records: no TensorFlow
from mlbench.projector import platforms  # plain records: no TensorFlow


def project_flags(parser):
    parser.add_argument("--suite", help="a benchmarks-page suite (e.g. dgx1_p100) to project "
                        "from its own base row (with --from=page).")
    parser.add_argument("--from", dest="source", default=None,
                        help="page (the suite's published figures) or a result.json of "
                             "`mlbench benchmark --output_dir`.")
    parser.add_argument("--model", help="model name (with --images_per_sec by hand).")
    parser.add_argument("--images_per_sec", type=float, help="measured images/sec.")
    parser.add_argument("--batch_size", type=int, help="per-device batch of that figure.")
    parser.add_argument("--devices", default="2,4,8", help="device counts, e.g. 2,4,8.")
    parser.add_argument("--platform", default=platforms.DEFAULT,
                        help="a platform (`mlbench list platforms`) or a JSON record file "
                             "with the same fields.")
    parser.add_argument("--variable_update", help="parameter_server | replicated | "
                        "distributed_replicated (default: the result's strategy).")
    parser.add_argument("--local_parameter_device", default="cpu", help="cpu | gpu.")
    parser.add_argument("--json", help="write every figure shown to this JSON file.")
    add_boolean(parser, "validate", "the projector against the whole page: the held-out "
                "single-host cells and the distributed table, beside linear scaling, and "
                "two-point calibration on the 4- and 8-GPU cells.")
    time_to_train_flags(parser)


def time_to_train_flags(parser):
    add_boolean(parser, "to_quality", "also the minutes (and dollars) to the MLPerf quality "
                "target per device count: samples to converge from MLCommons' reference "
                "convergence points ÷ the throughput, plus the closed rules' evaluations.")
    parser.add_argument("--benchmark", choices=sorted(benchmarks.BENCHMARKS),
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


def run_project(args):
    from mlbench.projector import calibration
    from mlbench.projector import page_suites
    from mlbench.projector import validation as page_validation
    if args.validate:
        text, output = page_validation.validation_report(page_suites.page_suite)
        calibrated = calibration.validate_page(page_suites.page_suite)
        print(text + "\n" + calibration.format_validation(calibrated))
        output = dict(output, two_point_calibration={k: v for k, v in calibrated.items()
                                                     if k != "cells"})
    elif args.suite or args.source == "page":
        if not (args.suite and args.source == "page"):
            raise ValueError("`--suite` goes with `--from=page` (project a page table from "
                             "its own base row).")
        text, output = page_validation.page_report(args.suite, page_suites.page_suite)
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
