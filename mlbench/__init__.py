"""mlbench: tf_cnn_benchmarks-style throughput and MLPerf-style time-to-quality runs.

Public surface: `train`, `fit` (`model.fit`'s signature), `benchmark`, `report`, `compare`, `models`, `data`, `TrainResult`,
`BenchmarkResult`, `RunInterrupted`, `Callback`, `project`; after a run, `load`, `evaluate`,
`export`.
Benchmark mode's parts live in the subpackage `mlbench.bench`.

The names load on first use (PEP 562), so `import mlbench` and `mlbench --help` do not
start TensorFlow, and the command line can quiet TensorFlow's start-up lines first.
"""
import importlib
import os
import sys
from typing import TYPE_CHECKING

if "tensorflow" not in sys.modules:
    # TensorFlow's C++ INFO lines (e.g. "Local rendezvous is aborting ... OUT_OF_RANGE" at
    # the end of every eval pass, from the input pipeline's prefetch) are read from this
    # variable once, when TensorFlow starts: only an import before TensorFlow can hide them.
    # Warnings and errors still show; a value the user set is kept.
    LOG_LEVEL_DEFAULTED = "TF_CPP_MIN_LOG_LEVEL" not in os.environ  # the CLI may set its own
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

from mlbench.version import __version__

_PUBLIC = {"train": ("mlbench.trainer.api", "train"),
           "fit": ("mlbench.trainer.fit", "fit"),
           "benchmark": ("mlbench.bench.bench", "benchmark"),
           "infer": ("mlbench.bench.infer", "infer"),
           "InferenceResult": ("mlbench.results.records", "InferenceResult"),
           "TrainResult": ("mlbench.results.records", "TrainResult"),
           "BenchmarkResult": ("mlbench.results.records", "BenchmarkResult"),
           "RunInterrupted": ("mlbench.training.interrupt", "RunInterrupted"),
           "Callback": ("mlbench.training.callbacks", "Callback"),
           "load": ("mlbench.trainer.evaluation", "load"),
           "evaluate": ("mlbench.trainer.evaluation", "evaluate"),
           "export": ("mlbench.trainer.evaluation", "export"),
           "report": ("mlbench.reporting", "report"),
           "project": ("mlbench.projector.time_to_train", "project"),
           "compare": ("mlbench.reporting.compare", "compare"),
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
    from mlbench.trainer.api import train  # noqa: F401
    from mlbench.bench.bench import benchmark  # noqa: F401
    from mlbench.bench.infer import infer  # noqa: F401
    from mlbench.results.records import InferenceResult  # noqa: F401
    from mlbench.results.records import BenchmarkResult  # noqa: F401
    from mlbench.trainer.evaluation import evaluate, export, load  # noqa: F401
    from mlbench.trainer.fit import fit  # noqa: F401
    from mlbench.reporting import report  # noqa: F401
    from mlbench.reporting.compare import compare  # noqa: F401
    from mlbench.results.records import TrainResult  # noqa: F401
    from mlbench.projector.time_to_train import project  # noqa: F401
    from mlbench.training.callbacks import Callback  # noqa: F401
    from mlbench.training.interrupt import RunInterrupted  # noqa: F401
