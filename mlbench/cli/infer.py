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
    parser.add_argument("--min_duration", type=float, default=600.0,
                        help="LoadGen's minimum run per scenario in seconds (MLPerf: 600).")
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
    if args.scenario:
        return _run_scenarios(args)
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
    them; exit 3 unless every one is VALID."""
    import os
    from mlbench.bench import loadgen
    for scenario in args.scenario:
        loadgen.check_scenario(scenario, args.server_target_qps, args.server_latency_ms)
    forward, make_samples, policy = loadgen.model_forward(
        args.model, precision=args.precision, jit_compile=args.jit_compile)
    results = []
    for scenario in args.scenario:
        root = args.loadgen_dir or (os.path.join(args.output_dir, "loadgen")
                                    if args.output_dir else None)
        log_dir = os.path.join(root, scenario) if root else \
            loadgen.default_log_dir(args.model, scenario)
        results.append(loadgen.run(
            forward, make_samples, scenario, log_dir, batch_size=args.batch_size,
            min_duration_s=args.min_duration, server_target_qps=args.server_target_qps,
            server_latency_ms=args.server_latency_ms))
        for reason in results[-1].reasons:
            print(f"{scenario}: LoadGen: {reason}")
        print(f"{scenario}: LoadGen's logs in {log_dir}", flush=True)
    print(f"{args.model} ({policy}) on MLCommons LoadGen")
    print(loadgen.table(results))
    return EXIT_OK if all(r.valid for r in results) else EXIT_TARGET
