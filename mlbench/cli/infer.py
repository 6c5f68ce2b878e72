"""`mlbench infer`: inference latency percentiles and throughput over a batch sweep."""
from mlbench.cli.common import EXIT_OK
from mlbench.files import refuse_earlier_results


def _batch_sizes(text):
    import argparse
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"({text!r}) must be integers separated by commas, "
                                         "e.g. 1,8,32") from None
    return sizes


def infer_flags(parser):
    parser.add_argument("model", help="a zoo model (`mlbench list models`; random weights).")
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


def run_infer(args):
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
