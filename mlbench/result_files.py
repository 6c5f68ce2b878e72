"""The result files runs write, one owner for all of them: where each kind lives, how it
is written (atomically, stamped with its kind) and how it is read back.

| kind      | file                    | written by                     |
|-----------|-------------------------|--------------------------------|
| train     | <model_dir>/result.json | `mlbench.train` (the runner)   |
| benchmark | <dir>/result.json       | `mlbench benchmark --output_dir` |
| suite     | <dir>/results.json      | a benchmark suite              |
| mlperf    | <dir>/results.json      | `mlbench mlperf` (a run set)   |

Reports, comparisons, evaluation, the projector and the MLPerf packager read through
`read`; files written before the `kind` stamp are recognised by their fields.
"""
import json
import os

from mlbench.files import write_json

FILES = {"train": "result.json", "benchmark": "result.json", "suite": "results.json",
         "mlperf": "results.json"}
KINDS = tuple(FILES)


def path_of(kind, folder):
    return os.path.join(folder, FILES[kind])


def write(kind, folder, data, indent=2):
    """Writes `data` stamped with `kind` to its file in `folder` (atomically); the path."""
    if kind not in FILES:
        raise ValueError(f"`kind` ({kind!r}) must be one of {list(KINDS)}.")
    path = path_of(kind, folder)
    write_json(path, {"kind": kind, **data}, indent=indent)
    return path


def read(path, expected=None, argument="path"):
    """(kind, folder, data) of the result file at `path` (a file, or a folder holding
    one); with `expected`, any other kind is refused naming what was found. Errors name
    `argument`, the caller's name for `path`."""
    file = _file(path, argument)
    with open(file) as f:
        data = json.load(f)
    # unstamped (older) files: by their fields, else the kind the caller expects there
    kind = data.get("kind") or _recognised(data) or (
        expected if isinstance(expected, str) else None)
    if kind not in FILES:
        raise ValueError(f"{file!r} is none of mlbench's results ({', '.join(KINDS)}): a "
                         "suite's results.json, a benchmark's or train run's result.json, "
                         "or an MLPerf run set's results.json.")
    if expected is not None and kind not in ((expected,) if isinstance(expected, str)
                                             else expected):
        raise ValueError(f"{file!r} holds a {kind} result, not {expected}.")
    return kind, os.path.dirname(file), data


def read_if_present(kind, folder):
    """The data of `kind`'s file in `folder`, or None when there is none yet."""
    path = path_of(kind, folder)
    return read(path, kind)[2] if os.path.isfile(path) else None


def _file(path, argument):
    if os.path.isfile(path):
        return path
    for name in ("results.json", "result.json"):
        candidate = os.path.join(path, name)
        if os.path.isfile(candidate):
            return candidate
    raise ValueError(f"`{argument}` ({path!r}) is no result file and no directory holding "
                     "results.json or result.json: give what a benchmark, suite, train or "
                     "mlperf run wrote.")


def _recognised(data):
    """The kind of a file written before the stamp, from the fields only it has."""
    if isinstance(data.get("results"), list):
        return "suite"
    if "images_per_sec" in data:
        return "benchmark"
    if "final_metrics" in data:
        return "train"
    if "score" in data and "runs" in data:
        return "mlperf"
    return None
