"""`mlbench infer`: inference latency percentiles and throughput over a batch sweep."""
from mlbench.cli.common import EXIT_OK, EXIT_TARGET
from mlbench.files import refuse_earlier_results


def _batch_sizes(text):
    import argparse
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"({text!r}) must be integers separated by commas, "
                                         "e.g. 1,8,32") from None
    return sizes


def _scenarios(text):
    import argparse
    from mlbench.bench import loadgen
    names = [part.strip() for part in text.split(",") if part.strip()]
    for name in names:
        if name not in loadgen.SCENARIOS:
            raise argparse.ArgumentTypeError(f"({name!r}) must be among "
                                             f"{','.join(loadgen.SCENARIOS)}")
    return names


def infer_flags(parser):
    parser.add_argument("model", help="a zoo model (`mlbench list models`; random weights), "
                        "a model_dir (its trained model) or an exported SavedModel "
                        "directory (its serving_default, as served).")
    parser.add_argument("--batch_sizes", type=_batch_sizes,
                        default=[1, 2, 4, 8, 16, 32, 64, 128, 256],
                        help="the sweep, e.g. 1,8,32 (default 1,2,4,...,256).")
    parser.add_argument("--precision", default="auto",
                        help="auto, float32, mixed_bfloat16 or mixed_float16.")
    parser.add_argument("--jit_compile", action="store_true",
                        help="compile the forward pass with XLA.")
    parser.add_argument("--num_warmup_batches", type=int, default=10,
                        help="untimed batches per batch size (counted in the result).")
    parser.add_argument("--min_batches", type=int, default=50,
                        help="timed batches per batch size, at least.")
    parser.add_argument("--min_seconds", type=float, default=1.0,
                        help="timed seconds per batch size, at least.")
    parser.add_argument("--max_seconds", type=float, default=30.0,
                        help="timed seconds per batch size, at most (fewer batches then).")
    parser.add_argument("--max_total_seconds", type=float, default=600.0,
                        help="the sweep's budget: larger batches are skipped once spent.")
    parser.add_argument("--output_dir", help="write inference.json here.")
    parser.add_argument("--scenario", type=_scenarios, default=[],
                        help="run MLPerf Inference scenarios on MLCommons' LoadGen instead "
                             "of the sweep: SingleStream, MultiStream, Server, Offline "
                             "(comma-separated); exit 3 if LoadGen says INVALID.")
    parser.add_argument("--min_duration", type=float,
                        help="LoadGen's minimum run per scenario in seconds (default: "
                             "LoadGen's MLPerf setting, 600; shorter is labelled "
                             "not MLPerf-compliant).")
    parser.add_argument("--max_batch", action="store_true",
                        help="find the largest batch within --memory_budget (doubling, then "
                             "bisection; each probe a child process) and the fastest one.")
    parser.add_argument("--memory_budget", type=float, metavar="MIB",
                        help="with --max_batch: the budget in MiB (default: the memory this "
                             "machine has available).")
    parser.add_argument("--quick", action="store_true",
                        help="LoadGen scenarios: a short run (1 s, 64 queries, 64 samples), "
                             "labelled not MLPerf-compliant in every output.")
    parser.add_argument("--accuracy", action="store_true",
                        help="LoadGen scenarios in accuracy mode on a model_dir's eval set: "
                             "top-1 from LoadGen's accuracy log against the float32 "
                             "model's (MLPerf: at least 99 %%); exit 3 below it.")
    parser.add_argument("--batch_size", type=int, default=32,
                        help="LoadGen scenarios: the most samples one forward pass takes "
                             "(Offline; MultiStream's query is 8 samples).")
    parser.add_argument("--server_target_qps", type=float,
                        help="Server: queries per second LoadGen issues (Poisson).")
    parser.add_argument("--server_latency_ms", type=float,
                        help="Server: the latency bound (MLPerf: 15 ResNet-50, 130 BERT).")
    parser.add_argument("--loadgen_dir",
                        help="LoadGen's logs (default: <output_dir>/loadgen, else "
                             "runs/loadgen/<model>_<scenario>).")


def run_infer(args):
    if args.accuracy and not args.scenario:
        args.scenario = ["Offline"]  # accuracy mode issues every sample once in any
    if args.scenario:
        return _run_scenarios(args)
    if args.max_batch:
        from mlbench.bench.capacity import max_batch
        found = max_batch(args.model, args.precision, args.memory_budget,
                          jit_compile=args.jit_compile)
        return EXIT_OK if found.largest_batch else EXIT_TARGET
    if args.quick:
        raise ValueError("`--quick` shortens LoadGen scenarios: give --scenario (e.g. "
                         "--scenario=Offline --quick).")
    refuse_earlier_results(args.output_dir, ("inference.json",), "--output_dir")
    from mlbench.bench.infer import infer
    result = infer(args.model, batch_sizes=args.batch_sizes, precision=args.precision,
                   jit_compile=args.jit_compile, num_warmup_batches=args.num_warmup_batches,
                   min_batches=args.min_batches, min_seconds=args.min_seconds,
                   max_seconds=args.max_seconds, max_total_seconds=args.max_total_seconds)
    if args.output_dir:
        from mlbench.results import files as result_files
        print(f"wrote {result_files.write(args.output_dir, result)}")
    return EXIT_OK


def _run_scenarios(args):
    """Each LoadGen scenario in turn; LoadGen's verdicts and figures printed as it states
    them; exit 3 unless every one is VALID (accuracy mode: unless each meets MLPerf's
    99 % of the float32 model)."""
    from mlbench.bench import loadgen
    for scenario in args.scenario:
        loadgen.check_scenario(scenario, 1.0 if args.accuracy else args.server_target_qps,
                               args.server_latency_ms)
    if args.accuracy and not _is_run_directory(args.model):
        raise ValueError(f"`--accuracy` needs a model_dir with an eval set (given "
                         f"{args.model!r}): a zoo model has random weights and synthetic "
                         "samples, an export no labels.")
    if args.accuracy:
        return _accuracy(args)
    served = loadgen.model_forward(args.model, precision=args.precision,
                                   jit_compile=args.jit_compile)
    results = []
    for scenario in args.scenario:
        log_dir = _log_dir(args, scenario)
        results.append(loadgen.run(
            served.forward, served.make_samples, scenario, log_dir,
            batch_size=args.batch_size, mlperf_model=_mlperf_model(args.model),
            quick=args.quick, min_duration_s=args.min_duration,
            server_target_qps=args.server_target_qps,
            server_latency_ms=args.server_latency_ms))
        for reason in results[-1].reasons:
            print(f"{scenario}: LoadGen: {reason}")
        print(f"{scenario}: LoadGen's logs in {log_dir}", flush=True)
    print(f"{args.model} ({served.policy}, samples: {served.samples}) on MLCommons LoadGen")
    print(loadgen.table(results))
    return EXIT_OK if all(r.valid for r in results) else EXIT_TARGET


def _accuracy(args):
    from mlbench.bench import accuracy
    results = accuracy.of_run(args.model, args.scenario, lambda s: _log_dir(args, s),
                              args.precision, args.batch_size, args.jit_compile)
    for result in results:
        print(result.line())
        print(f"{result.scenario}: LoadGen's logs and accuracy.txt in {result.log_dir}")
    return EXIT_OK if all(r.passed for r in results) else EXIT_TARGET


def _log_dir(args, scenario):
    import os
    from mlbench.bench import loadgen
    root = args.loadgen_dir or (os.path.join(args.output_dir, "loadgen")
                                if args.output_dir else None)
    name = scenario + ("_accuracy" if args.accuracy else "")
    return os.path.join(root, name) if root else loadgen.default_log_dir(args.model, name)


def _is_run_directory(model):
    import os
    return isinstance(model, str) and os.path.exists(os.path.join(model, "run.json"))


def _mlperf_model(model):
    """The MLPerf Inference benchmark whose LoadGen settings apply to `model`, or None."""
    from mlbench.mlperf import benchmarks
    return benchmarks.inference_name_of(model) if isinstance(model, str) else None
