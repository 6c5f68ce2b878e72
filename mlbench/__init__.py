"""mlbench: tf_cnn_benchmarks-style throughput and MLPerf-style time-to-quality runs.

Public surface: `train`, `benchmark`, `models`, `data`, `TrainResult`, `BenchmarkResult`.
"""
from mlbench import data, models
from mlbench.api import train
from mlbench.results import TrainResult

__all__ = ["train", "models", "data", "TrainResult"]
__version__ = "0.1.0"

# Bound last: the name `benchmark` is the function; the package stays importable
# as `mlbench.benchmark.<module>` through sys.modules.
from mlbench.benchmark.bench import benchmark  # noqa: E402
from mlbench.benchmark.result import BenchmarkResult  # noqa: E402

__all__ += ["benchmark", "BenchmarkResult"]
