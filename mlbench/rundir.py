"""What a run directory records to rebuild its model and data without the original call.

`run.json` is written when a run starts (a sidecar evaluator reads it while the run
trains): how to build the model — a zoo name or a registered name with its options, or
your own function's import path `module:function` — the run's arguments as recorded, and
which of them were objects that cannot be named (a lambda or a model instance, arrays, a
dataset, a loss or metric object). Loading such a run later asks for those by name.
"""
import importlib
import json
import os

from mlbench.files import write_json
from mlbench.reprs import short

FILE = "run.json"
# Arguments whose value is data or code: recorded by name when they have one.
REBUILT = ("model", "data", "eval_data", "loss", "metrics")


def import_path(function):
    """`module:qualname` when a fresh process can import `function` back, else None (a
    lambda, a nested function, or one defined in `__main__` or a notebook)."""
    module = getattr(function, "__module__", None)
    qualname = getattr(function, "__qualname__", "")
    if not module or module == "__main__" or "<" in qualname:
        return None
    try:
        found = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return None
    return f"{module}:{qualname}" if found is function else None


def model_reference(model, info):
    """How to build `model` again: {'kind': 'zoo' | 'registered' | 'import' | 'unnamed'}."""
    if isinstance(model, str):
        return {"kind": "registered" if info.own else "zoo", "name": model}
    path = None if info.instance is not None else import_path(model)
    if path:
        return {"kind": "import", "import": path}
    what = "a model instance" if info.instance is not None else f"{short(model)}"
    return {"kind": "unnamed", "description": what}


def _named(value):
    """Whether a recorded value rebuilds the original (a name, or plain values)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return True
    if isinstance(value, (list, tuple)):
        return all(isinstance(v, (str, int, float, bool)) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _named(v) for k, v in value.items())
    return False


def rebuild_record(arguments, info, model_plan, precision):
    """The record of a resolved run (`plan.resolve` calls it; nothing is written)."""
    return {"model": dict(model_reference(arguments.model, info),
                          num_classes=model_plan.num_classes,
                          options=dict(model_plan.options), keras=info.keras),
            "precision": precision,
            "unnamed": [k for k in REBUILT[1:] if not _named(getattr(arguments, k))]}


def write(model_dir, plan):
    """Writes run.json (the record and the run's arguments) into `model_dir`."""
    if model_dir and plan.rebuild is not None:
        write_json(os.path.join(model_dir, FILE), dict(plan.rebuild, arguments=plan.arguments),
                   indent=1)


def read(model_dir):
    """The run.json of `model_dir`; refused, naming the path, when there is none."""
    path = os.path.join(model_dir or "", FILE)
    if not model_dir or not os.path.exists(path):
        raise ValueError(f"`model_dir` ({model_dir!r}) holds no mlbench run (no {FILE}; runs "
                         "write it when they start): give the model_dir of a train run.")
    with open(path) as f:
        return json.load(f)


def model_argument(record, model=None):
    """The `model=` that rebuilds the run's model: `model` if given, else from the record."""
    if model is not None:
        return model
    reference = record["model"]
    if reference["kind"] in ("zoo", "registered"):
        return reference["name"]
    if reference["kind"] == "import":
        module, qualname = reference["import"].split(":")
        found = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
        return found
    raise ValueError(f"the run's model ({reference['description']}) cannot be rebuilt from "
                     "its record (only a name or an importable function can): give "
                     "`model=` (the same function), or train with a function defined in "
                     "an importable module.")


def train_arguments(record, defaults, model=None, data=None):
    """`mlbench.train` arguments that rebuild the run's model and its eval data on one
    device, writing nothing; `data` replaces the run's data (its eval set is all of it)."""
    arguments = {**defaults, **{k: v for k, v in record["arguments"].items()
                                if k in defaults}}
    arguments.update(model=model_argument(record, model), callbacks=None, model_dir=None,
                     verbose=False, strategy="one_device", num_devices=None, trace_dir=None,
                     warmup=False, init_checkpoint=None, precision=record["precision"])
    if data is not None:
        arguments.update(data=data, eval_data=None if isinstance(data, str) else data)
    missing = [k for k in record["unnamed"] if data is None or k not in ("data", "eval_data")]
    if missing:
        raise ValueError(f"the run's {missing} were objects (arrays, a dataset, a loss or "
                         "metric object) that cannot be rebuilt from its record: give "
                         "`data=` (and train with loss and metric names to evaluate "
                         "without them).")
    from mlbench.models import own
    if own.is_keras_model(model):
        arguments["precision"] = "auto"  # an instance keeps the policy it was built under
    return arguments
