"""The projector: throughput, time and cost on devices we do not have, from one we measured.

`scaling` (the model: compute + gradient all-reduce over a platform record),
`platforms` (the records, every figure with its source), `page` (the TensorFlow
benchmarks page's suites, the projector's golden data), `validation` (the projector
against the page), `calibration` (two-point fits from a user's own 1- and 2-device
readings) and `time_to_train` (minutes and dollars to an MLPerf target). It reads
measurements; it runs no benchmark.
"""
