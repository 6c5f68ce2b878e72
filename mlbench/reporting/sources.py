"""What a run directory holds, read back: one `Source` per benchmark suite, single
benchmark, train run or MLPerf run set, holding its record (`mlbench.results.records`)."""
import dataclasses
from typing import Any, List

from mlbench.results import files as result_files
from mlbench.results.records import BenchmarkResult


@dataclasses.dataclass(frozen=True)
class Source:
    """One thing that ran.

    Attributes:
      kind: 'suite', 'benchmark', 'train', 'mlperf', 'inference', or 'malformed' (a result
        file that could not be read: `problem` says why, and there is no record).
      record: the file's record (SuiteResults, BenchmarkResult, TrainResult,
        MLPerfResults or InferenceResult).
      results: the benchmark results in it (a suite's, or a benchmark's own).
    """
    kind: str
    path: str
    title: str
    record: Any = None
    results: List[BenchmarkResult] = dataclasses.field(default_factory=list)
    problem: str = ""

    @property
    def environment(self):
        for r in self.results:
            if r.environment:
                return r.environment
        return getattr(self.record, "environment", None) or {}


def load(path):
    """A Source from a run directory (or the JSON file in it)."""
    kind, folder, record = result_files.read(path)
    if kind == "suite":
        return Source("suite", folder, record.title or folder, record, record.results)
    if kind == "benchmark":
        return Source("benchmark", folder, f"{record.model} benchmark", record, [record])
    if kind == "train":
        return Source("train", folder, f"{record.arguments.get('model', 'train')} run", record)
    if kind == "inference":
        return Source("inference", folder, f"{record.model} inference", record)
    return Source("mlperf", folder, f"MLPerf {record.settings.benchmark}", record)


def load_all(paths, keep_malformed=False):
    """Every source, all checked before anything is written. With `keep_malformed` (a
    report) a malformed result file becomes a Source of kind 'malformed' whose `problem`
    says what is wrong, so the page shows it instead of failing on it."""
    if not paths:
        raise ValueError("`paths` is empty: give at least one run directory.")
    return [_load_or_malformed(p) if keep_malformed else load(p) for p in paths]


def _load_or_malformed(path):
    try:
        return load(path)
    except result_files.MalformedResult as e:
        return Source("malformed", str(path), f"malformed result: {path}", problem=str(e))


def configuration(result):
    """What makes two benchmark results comparable."""
    return (result.model, result.num_devices, result.data, result.batch_size,
            result.variable_update, result.ran.get("precision"),
            bool(result.ran.get("forward_only")))


def run_totals(result):
    """The per-run total images/sec of a benchmark result."""
    return [r.total_images_per_sec for r in result.runs]
