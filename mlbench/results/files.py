"""The result files runs write, one owner for all of them: where each kind lives, how its
record is written (atomically, stamped with its kind and schema) and read back (checked,
then decoded into the record).

| kind      | file                    | record (`results.records`) | written by          |
|-----------|-------------------------|-----------------|--------------------------------|
| train     | <model_dir>/result.json | TrainResult     | `mlbench.train` (the runner)   |
| benchmark | <dir>/result.json       | BenchmarkResult | `mlbench benchmark --output_dir` |
| suite     | <dir>/results.json      | SuiteResults    | a benchmark suite              |
| mlperf    | <dir>/results.json      | MLPerfResults   | `mlbench mlperf` (a run set)   |
| inference | <dir>/inference.json    | InferenceResult | `mlbench infer --output_dir`   |

Reports, comparisons, evaluation, the projector and the MLPerf packager read through
`read`, which returns records; files written before the `kind` stamp are recognised by
their fields.
"""
import json
import os

from mlbench.files import write_json
from mlbench.results import codec, records

FILES = {"train": "result.json", "benchmark": "result.json", "suite": "results.json",
         "mlperf": "results.json", "inference": "inference.json"}
# written with every file; a reader refuses a newer one it cannot know, and upgrades an
# older one here (`_upgraded`). 2: a history record's learning rate is `learning_rate`
# (1 wrote `lr`). 3: a train result keeps its arguments under "arguments" (2 wrote
# "config").
SCHEMA = 3
RESULT_KINDS = tuple(FILES)
RECORDS = {"train": records.TrainResult, "benchmark": records.BenchmarkResult,
           "suite": records.SuiteResults, "mlperf": records.MLPerfResults,
           "inference": records.InferenceResult}


def path_of(kind, folder):
    return os.path.join(folder, FILES[kind])


def write(folder, record, indent=2):
    """Writes `record` to its kind's file in `folder` (created if needed; the file
    atomically), stamped with its kind and the schema; the path."""
    kind = next((k for k, cls in RECORDS.items() if isinstance(record, cls)), None)
    if kind is None:
        raise TypeError(f"`record` ({type(record).__name__}) is none of the result records "
                        f"({', '.join(cls.__name__ for cls in RECORDS.values())}).")
    os.makedirs(folder, exist_ok=True)
    path = path_of(kind, folder)
    write_json(path, {"kind": kind, "schema": SCHEMA, **codec.encode(record)}, indent=indent)
    return path


class MalformedResult(ValueError):
    """A result file that is not what its kind writes: bad JSON or a field of the wrong
    type (exit 2, naming the file and the first bad field)."""


# The fields every reader relies on, per kind, with the JSON types they must have
# (None: null allowed). Checked on every read: a garbled file is named, never half-read.
NUMBER = (int, float)
FIELDS = {
    "train": {"final_metrics": dict, "steps": int, "history": list, "arguments": dict,
              "ran": dict, "reached_target": bool, "status": str,
              "examples_per_second": NUMBER + (type(None),),
              "time_to_quality_s": NUMBER + (type(None),)},
    "benchmark": {"model": str, "images_per_sec": dict, "runs": list, "num_devices": int,
                  "batch_size": int},
    "suite": {"results": list},
    "mlperf": {"score": dict, "runs": list, "settings": dict},
    "inference": {"model": str, "rows": list, "precision": str},
}
_JSON_NAMES = {dict: "an object", list: "a list", str: "a string", bool: "true or false",
               int: "an integer", float: "a number", type(None): "null"}


def check_fields(kind, data, file, stamped=True):
    """Raises MalformedResult naming `file` and the first field missing or of a wrong type
    (a file written before the kind stamp may lack fields: only their types are checked)."""
    if not isinstance(data, dict):
        raise MalformedResult(f"{file!r} holds {_json_name(data)}, not a {kind} result "
                              "(a JSON object).")
    for field, types in FIELDS[kind].items():
        types = types if isinstance(types, tuple) else (types,)
        value = data.get(field, KeyError)
        if value is KeyError and not stamped:
            continue
        if value is KeyError:
            raise MalformedResult(f"{file!r} is not a well-formed {kind} result: field "
                                  f"{field!r} is missing.")
        wrong = isinstance(value, bool) and bool not in types  # JSON true is no number
        if wrong or not isinstance(value, types):
            raise MalformedResult(
                f"{file!r} is not a well-formed {kind} result: field {field!r} is "
                f"{_json_name(value)}, expected {' or '.join(_JSON_NAMES[t] for t in types)}.")


def _json_name(value):
    return next((name for t, name in _JSON_NAMES.items()
                 if isinstance(value, t) and not (isinstance(value, bool) and t is not bool)),
                type(value).__name__)


def read(path, expected=None, argument="path"):
    """(kind, folder, record) of the result file at `path` (a file, or a folder holding
    one); with `expected`, any other kind is refused naming what was found. Errors name
    `argument`, the caller's name for `path`; a malformed file is MalformedResult naming
    the file and its first bad field."""
    file = _file(path, argument)
    try:
        with open(file) as f:
            data = json.load(f)
    except ValueError as e:  # json.JSONDecodeError, UnicodeDecodeError
        raise MalformedResult(f"{file!r} is not valid JSON ({e}): a truncated or garbled "
                              "result file; re-run what wrote it.") from None
    if not isinstance(data, dict):
        check_fields(expected if isinstance(expected, str) else "result", data, file)
    # unstamped (older) files: by their fields, else the kind the caller expects there
    kind = data.get("kind") or _recognised(data) or (
        expected if isinstance(expected, str) else None)
    if kind not in FILES:
        raise ValueError(f"{file!r} is none of mlbench's results ({', '.join(RESULT_KINDS)}): a "
                         "suite's results.json, a benchmark's or train run's result.json, "
                         "or an MLPerf run set's results.json.")
    if expected is not None and kind not in ((expected,) if isinstance(expected, str)
                                             else expected):
        raise ValueError(f"{file!r} holds a {kind} result, not {expected}.")
    schema = data.get("schema", 1)  # files written before the stamp are schema 1
    if not isinstance(schema, int) or isinstance(schema, bool) or schema > SCHEMA:
        raise MalformedResult(f"{file!r} has schema {schema!r}; this mlbench reads schema "
                              f"{SCHEMA} and older: read it with the mlbench that wrote it.")
    data = _upgraded(kind, data, schema)
    check_fields(kind, data, file, stamped="kind" in data)
    try:
        record = codec.decode(RECORDS[kind], data)
    except (codec.DecodeError, TypeError, ValueError) as e:
        raise MalformedResult(f"{file!r} is not a well-formed {kind} result: {e}.") from None
    return kind, os.path.dirname(file), record


def _upgraded(kind, data, schema):
    """An older file's fields as this schema names them (the only place that knows)."""
    if kind != "train":
        return data
    data = dict(data)
    if schema < 2 and isinstance(data.get("history"), list):
        data["history"] = [{("learning_rate" if k == "lr" else k): v for k, v in h.items()}
                           if isinstance(h, dict) else h for h in data["history"]]
    if schema < 3 and "config" in data and "arguments" not in data:
        data["arguments"] = data.pop("config")
    return data


def read_if_present(kind, folder):
    """The record of `kind`'s file in `folder`, or None when there is none yet."""
    path = path_of(kind, folder)
    return read(path, kind)[2] if os.path.isfile(path) else None


def _file(path, argument):
    if os.path.isfile(path):
        return path
    for name in ("results.json", "result.json", "inference.json"):
        candidate = os.path.join(path, name)
        if os.path.isfile(candidate):
            return candidate
    raise ValueError(f"`{argument}` ({path!r}) is no result file and no directory holding "
                     "results.json, result.json or inference.json: give what a benchmark, "
                     "suite, train, mlperf or infer run wrote.")


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
