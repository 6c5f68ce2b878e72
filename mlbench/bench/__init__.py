"""Benchmark mode (the tf_cnn_benchmarks method): `mlbench.benchmark` is `bench.benchmark`."""
