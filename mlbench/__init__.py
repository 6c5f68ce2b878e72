"""mlbench: tf_cnn_benchmarks-style throughput and MLPerf-style time-to-quality runs.

Public surface: `train`, `benchmark`, `models`, `data`, `TrainResult`, `BenchmarkResult`.
Benchmark mode's parts live in the subpackage `mlbench.bench`.

The names load on first use (PEP 562), so `import mlbench` and `mlbench --help` do not
start TensorFlow, and the command line can quiet TensorFlow's start-up lines first.
"""
import importlib
from typing import TYPE_CHECKING

from mlbench.version import __version__

_PUBLIC = {"train": ("mlbench.api", "train"),
           "benchmark": ("mlbench.bench.bench", "benchmark"),
           "TrainResult": ("mlbench.results", "TrainResult"),
           "BenchmarkResult": ("mlbench.bench.result", "BenchmarkResult"),
           "models": ("mlbench.models", None), "data": ("mlbench.data", None)}

__all__ = sorted(_PUBLIC) + ["__version__"]


def __getattr__(name):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'mlbench' has no attribute {name!r}")
    module, attribute = _PUBLIC[name]
    value = importlib.import_module(module)
    return getattr(value, attribute) if attribute else value


def __dir__():
    return __all__


if TYPE_CHECKING:  # what IDEs and type checkers see
    from mlbench import data, models  # noqa: F401
    from mlbench.api import train  # noqa: F401
    from mlbench.bench.bench import benchmark  # noqa: F401
    from mlbench.bench.result import BenchmarkResult  # noqa: F401
    from mlbench.results import TrainResult  # noqa: F401
