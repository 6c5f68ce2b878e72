"""What a run directory records to rebuild its model and data without the original call.

`run.json` is written when a run starts (a sidecar evaluator reads it while the run
trains): how to build the model — a zoo name or a registered name with its options, or
your own function's import path `module:function` — the run's arguments as recorded, and
which of them were objects that cannot be named (a lambda or a model instance, arrays, a
dataset, a loss or metric object). Loading such a run later asks for those by name.
"""
import dataclasses
import importlib
import json
import os
import time

from mlbench.data import specs
from mlbench.files import write_json
from mlbench.plan.arguments import TrainArguments
from mlbench.reprs import short
from mlbench.results import codec
from mlbench.results.records import InputSpec, ModelReference, RunRecord

FILE = "run.json"
# run.json's schema: 2 adds the run's identity (what a resume may not change); a reader
# refuses a newer one by name rather than half-read it.
SCHEMA = 2
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


def model_reference(model, info, model_plan):
    """How to build `model` again (a ModelReference: zoo, registered, import, unnamed)."""
    built = dict(num_classes=model_plan.num_classes, options=dict(model_plan.options),
                 keras=info.keras)
    if isinstance(model, str):
        return ModelReference("registered" if info.own else "zoo", name=model, **built)
    path = None if info.instance is not None else import_path(model)
    if path:
        return ModelReference("import", import_path=path, **built)
    what = "a model instance" if info.instance is not None else f"{short(model)}"
    return ModelReference("unnamed", description=what, **built)


def _named(value):
    """Whether a recorded value rebuilds the original (a name, or plain values)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return True
    if isinstance(value, (list, tuple)):
        return all(isinstance(v, (str, int, float, bool)) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _named(v) for k, v in value.items())
    return False


def rebuild_record(arguments, info, model_plan, precision, element_spec=None):
    """The record of a resolved run (`plan.resolve` calls it; nothing is written).
    `element_spec`: your own data's (features, labels[, weights]) spec, kept so that the
    model can be rebuilt, loaded and exported without the data (`input_spec`)."""
    spec = None if element_spec is None else InputSpec(specs.encode(element_spec[0]),
                                                       specs.encode(element_spec[1]))
    return RunRecord(model_reference(arguments.model, info, model_plan), precision,
                     [k for k in REBUILT[1:] if not _named(getattr(arguments, k))], spec)


def write(model_dir, plan, log):
    """Writes run.json (the record, the run's arguments and its cadence: the sidecar knows
    from it which checkpoints the run writes) into `model_dir`. A malformed run.json
    already there is moved aside (`run.json.bad-<time>`), said with `log`, never lost."""
    if model_dir and plan.rebuild is not None:
        _set_aside_if_malformed(model_dir, log)
        record = dataclasses.replace(plan.rebuild, arguments=plan.arguments.recorded(),
                                     cadence=plan.cadence, schema=SCHEMA)
        write_json(os.path.join(model_dir, FILE), codec.encode(record), indent=1)


def _set_aside_if_malformed(model_dir, log):
    path = os.path.join(model_dir, FILE)
    try:
        read_sound(model_dir)
    except MalformedRunRecord as e:
        aside = f"{path}.bad-{time.strftime('%Y%m%dT%H%M%S')}"
        os.replace(path, aside)
        log(f"{e.reason}: moved it to {aside} (kept for inspection) and wrote a new one; "
            "the checkpoints' variables were matched against this run")


class MalformedRunRecord(ValueError):
    """A run.json that is not one (truncated or garbled), naming the path and the fault."""

    def __init__(self, path, fault):
        self.reason = f"{path!r} is not a well-formed run record ({fault})"
        super().__init__(f"{self.reason}: a truncated or garbled run.json; the run that "
                         "wrote it must start again.")


def read(model_dir):
    """The RunRecord of `model_dir`'s run.json; refused, naming the path, when there is none,
    it is not one, or a newer mlbench wrote it."""
    path = os.path.join(model_dir or "", FILE)
    if not model_dir or not os.path.exists(path):
        raise ValueError(f"`model_dir` ({model_dir!r}) holds no mlbench run (no {FILE}; runs "
                         "write it when they start): give the model_dir of a train run.")
    return read_sound(model_dir)


def read_sound(model_dir):
    """The RunRecord of `model_dir`'s run.json, or None when there is none.

    Raises:
      MalformedRunRecord: bad JSON, or a field missing or of the wrong kind.
      ValueError: a run.json of a newer schema (a newer mlbench wrote it).
    """
    path = os.path.join(model_dir, FILE)
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            value = json.load(f)
        record = codec.decode(RunRecord, value)
    except ValueError as e:  # bad JSON, or a field missing or of the wrong kind
        raise MalformedRunRecord(path, e) from None
    if record.schema > SCHEMA:
        raise ValueError(f"{path!r} was written by a newer mlbench (run.json schema "
                         f"{record.schema}; this mlbench reads up to {SCHEMA}): upgrade "
                         "mlbench to resume or read this run, or give another `model_dir`.")
    return record


def model_argument(record, model=None):
    """The `model=` that rebuilds the run's model: `model` if given, else from the record."""
    if model is not None:
        return model
    reference = record.model
    if reference.kind in ("zoo", "registered"):
        return reference.name
    if reference.kind == "import":
        return _imported(reference.import_path)
    raise ValueError(f"the run's model ({reference.description}) cannot be rebuilt from "
                     "its record (only a name or an importable function can): give "
                     "`model=` (the same function), or train with a function defined in "
                     "an importable module.")


def _imported(path):
    """The function at `module:qualname`, the current directory searched first (as
    `python -m` and `--import` search it); a module not found says what to do."""
    from mlbench.config import import_here
    module, qualname = path.split(":")
    try:
        found = import_here(module)
    except ModuleNotFoundError as e:
        raise ValueError(f"the run's model is {path!r}, but {e}: run from the directory "
                         f"that holds {module.split('.')[0]!r} (or add it to PYTHONPATH; on "
                         f"the command line `--import={module}`), or give `model=`.") from e
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


def train_arguments(record, defaults, model=None, data=None, needs_data=True):
    """The TrainArguments that rebuild the run's model and its eval data on one
    device, writing nothing; `data` replaces the run's data (its eval set is all of it).

    needs_data: False to rebuild the model only (load, export): data that cannot be
      rebuilt from the record is replaced by one example of zeros shaped as the recorded
      `input_spec`, and a loss or metric object (not needed to restore weights) by the
      defaults."""
    arguments = {**defaults, **{k: v for k, v in record.arguments.items() if k in defaults}}
    arguments.update(model=model_argument(record, model), callbacks=None, model_dir=None,
                     verbose=False, strategy="one_device", num_devices=None, trace_dir=None,
                     warmup=False, init_checkpoint=None, precision=record.precision)
    if data is None and not needs_data and "data" in record.unnamed and record.input_spec:
        data = specs.zeros_example(record.input_spec.features, record.input_spec.labels)
        arguments.update(target=None, keep_best=None, eval_every=None,
                         eval_every_epochs=None, train_steps=1, train_epochs=None,
                         steps_per_epoch=None, global_batch_size=1,
                         gradient_accumulation_steps=1,
                         data_options={k: v for k, v in (arguments.get("data_options") or
                                                         {}).items() if k == "batched"})
        for name in ("loss", "metrics"):
            if name in record.unnamed:
                arguments[name] = None
    if data is not None:
        arguments.update(data=data, eval_data=None if isinstance(data, str) else data)
    if not needs_data and arguments["eval_data"] is data and not isinstance(data, str):
        arguments["eval_data"] = None
    missing = [k for k in record.unnamed if (data is None or k not in ("data", "eval_data"))
               and arguments.get(k) is not None]
    if missing:
        raise ValueError(f"the run's {missing} were objects (arrays, a dataset, a loss or "
                         "metric object) that cannot be rebuilt from its record: give "
                         "`data=` (and train with loss and metric names to evaluate "
                         "without them).")
    from mlbench.models import own
    if own.is_keras_model(model):
        arguments["precision"] = "auto"  # an instance keeps the policy it was built under
    return TrainArguments(**arguments)
