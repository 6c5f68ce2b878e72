"""tf_cnn_benchmarks-style throughput: warm-up excluded, per-step statistics, repeated runs.

MLBENCH_EXAMPLE_TINY=1 runs it on a tiny model in seconds (the tests do).
"""
import os

import mlbench

TINY = bool(os.environ.get("MLBENCH_EXAMPLE_TINY"))
result = mlbench.benchmark("resnet_tiny" if TINY else "resnet50", batch_size=8 if TINY else 32,
                           num_warmup_batches=2 if TINY else 5, num_batches=4 if TINY else 20,
                           num_runs=2)
for run in result.runs:
    print(run.line(), f"total images/sec: {run.total_images_per_sec:.2f}")
mfu = "n/a" if result.mfu is None else f"{result.mfu:.1%}"
across = result.images_per_sec  # a Stats record: the runs' total images/sec
print(f"across {across.runs} runs: mean {across.mean:.2f} std {across.std:.2f} "
      f"min {across.min:.2f} max {across.max:.2f}", result.ran, f"MFU {mfu} ({result.peak_source})")
