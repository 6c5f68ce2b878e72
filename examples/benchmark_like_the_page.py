"""tf_cnn_benchmarks-style throughput: warm-up excluded, per-step statistics, repeated runs."""
import mlbench

result = mlbench.benchmark("resnet50", batch_size=32, num_warmup_batches=5, num_batches=20,
                           num_runs=2)
for run in result.runs:
    print(run.line(), f"total images/sec: {run.total_images_per_sec:.2f}")
print(result.images_per_sec, result.ran, f"MFU {result.mfu:.1%} of {result.peak_source}")
