"""`mlbench benchmark`: one model or a suite, timed the tf_cnn_benchmarks way."""
import os

from mlbench.cli import help_text
from mlbench.results import files as result_files
from mlbench.cli.common import (EXIT_OK, EXIT_TARGET, add_boolean, gin_flags, given_arguments,
                                print_dry_run, signature_flags)
from mlbench.files import refuse_earlier_results
from mlbench.projector import platforms  # plain records: no TensorFlow


def benchmark_flags(parser):
    """One flag per argument of `mlbench.benchmark` (tf_cnn_benchmarks' names work too)."""
    from mlbench.bench.bench import benchmark
    parser.add_argument("--suite", help="a suite under gin/benchmarks/ (e.g. dgx1_p100).")
    signature_flags(parser, benchmark, help_text.BENCHMARK, skip=("clock", "verbose"))
    add_boolean(parser, "use_fp16", "train in mixed_float16 (overrides --precision).")
    parser.add_argument("--output_dir", help="result.json (one model) or the suite's report.")
    add_boolean(parser, "dry_run", "check everything (model, data, devices, strategy; a "
                "suite's file and models), print what would run, and run nothing.")
    parser.add_argument("--project", type=int, metavar="N",
                        help="add a projected column: this device x 2, 4 ... N over "
                             "--project_platform's interconnect (a projection, labelled so).")
    parser.add_argument("--project_platform", default=platforms.DEFAULT,
                        help="platform record for --project (`mlbench list platforms`) or a "
                             "JSON file.")
    add_boolean(parser, "max_batch", "find the largest batch whose training step fits "
                "--memory_budget (doubling, then bisection; each probe a child process).")
    parser.add_argument("--memory_budget", type=float, metavar="MIB",
                        help="with --max_batch: the budget in MiB (default: the memory this "
                             "machine has available).")
    parser.add_argument("--target_batch", type=int, metavar="N",
                        help="with --max_batch: a global batch to reach; prints the fewest "
                             "gradient accumulation steps whose micro-batch fits.")
    gin_flags(parser)


def run_benchmark(args):
    if args.project is not None:  # checked before any step runs
        from mlbench.projector import throughput
        throughput.device_counts(args.project, args.num_devices or 1)
        platforms.get(args.project_platform)
    if args.suite:
        return suite_dry_run(args) if args.dry_run else run_suite(args)
    if not args.model:
        raise ValueError("`--model` (or `--suite`) is required.")
    if args.max_batch:
        from mlbench.bench.capacity import max_batch
        found = max_batch(args.model, args.precision or "auto", args.memory_budget,
                          train=True, target_batch=args.target_batch)
        return EXIT_OK if found.largest_batch else EXIT_TARGET
    refuse_earlier_results(args.output_dir, ("result.json",), "--output_dir")
    from mlbench.bench.bench import benchmark
    given = given_arguments(args, benchmark)
    if args.use_fp16:
        given["precision"] = "mixed_float16"
    if args.data_dir and "data" not in given:
        given["data"] = "real"
    if args.dry_run:
        from mlbench.bench.bench import plan_benchmark
        plan, _ = plan_benchmark(**given)
        return print_dry_run(plan.summary())
    result = benchmark(**given)
    if args.project:
        from mlbench.projector import attach, page_suites, throughput
        result, projected = attach.attach(result, args.project, args.project_platform,
                                          page_suites.page_suite)
        print(throughput.table_of(projected))
    if args.output_dir:
        os.makedirs(args.output_dir, exist_ok=True)
        result_files.write(args.output_dir, result, indent=1)
    return EXIT_OK


def suite_dry_run(args):
    """A suite's file read, its models and (for real data) its data checked."""
    from mlbench.bench import suite
    cells = suite.planned_cells(args.suite, data_dir=args.data_dir)
    return print_dry_run([f"{c['model']} on {c['devices']} device(s), {c['data']} data"
                          for c in cells], f" of suite {args.suite}")


def run_suite(args):
    from mlbench.bench import suite
    overrides = {"data_dir": args.data_dir, "output_dir": args.output_dir,
                 "project": args.project, "project_platform": args.project_platform
                 if args.project else None}
    _, paths = suite.run_named(args.suite, args.gin_bindings,
                               **{k: v for k, v in overrides.items() if v})
    if paths:
        print("\n".join(f"wrote {p}" for p in paths.values()))
    return EXIT_OK
