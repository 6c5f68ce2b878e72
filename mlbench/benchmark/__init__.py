"""Benchmark mode: tf_cnn_benchmarks' method on the TF2 stack (timing, statistics, reports)."""
