"""What a run directory holds, read back: one `Source` per benchmark suite, single
benchmark, train run or MLPerf run set."""
import dataclasses
from typing import Any, Dict, List

from mlbench import result_files


@dataclasses.dataclass
class Source:
    """One thing that ran. `results`: benchmark results as dicts (suite and benchmark);
    `data`: the whole file read."""
    kind: str
    path: str
    title: str
    data: Dict[str, Any]
    results: List[Dict[str, Any]] = dataclasses.field(default_factory=list)

    @property
    def environment(self):
        for r in self.results:
            if r.get("environment"):
                return r["environment"]
        return self.data.get("environment") or {}


def load(path):
    """A Source from a run directory (or the JSON file in it)."""
    kind, folder, data = result_files.read(path)
    if kind == "suite":
        return Source("suite", folder, data.get("title") or folder, data, data["results"])
    if kind == "benchmark":
        return Source("benchmark", folder, f"{data['model']} benchmark", data, [data])
    if kind == "train":
        return Source("train", folder, f"{data.get('config', {}).get('model', 'train')} run",
                      data)
    return Source("mlperf", folder, f"MLPerf {data['settings'].get('benchmark')}", data)


def load_all(paths, keep_malformed=False):
    """Every source, all checked before anything is written. With `keep_malformed` (a
    report) a malformed result file becomes a Source of kind 'malformed' whose `data`
    says what is wrong, so the page shows it instead of failing on it."""
    if not paths:
        raise ValueError("`paths` is empty: give at least one run directory.")
    return [_load_or_malformed(p) if keep_malformed else load(p) for p in paths]


def _load_or_malformed(path):
    try:
        return load(path)
    except result_files.MalformedResult as e:
        return Source("malformed", str(path), f"malformed result: {path}",
                      {"problem": str(e)})


def configuration(result):
    """What makes two benchmark results comparable."""
    ran = result.get("ran") or {}
    return (result["model"], result["num_devices"], result["data"], result["batch_size"],
            result["variable_update"], ran.get("precision"), bool(ran.get("forward_only")))


def run_totals(result):
    """The per-run total images/sec of a benchmark result."""
    return [r["total_images_per_sec"] for r in result["runs"]]
