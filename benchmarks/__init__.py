"""Benchmark scripts (run as `python benchmarks/<name>.py`).

This file makes `benchmarks` a regular package: gin-config's system-path
reader looks up `include 'benchmarks/x.gin'` as a Python package and crashes
on a namespace package (its origin is None) before trying gin/'s search path.
"""
