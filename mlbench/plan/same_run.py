"""A model_dir holds one run: what a resume may change, and the refusal of the rest.

A run resumes from the checkpoints in its model_dir. Its budget (`train_steps` or
`train_epochs`), eval cadence, callbacks and verbosity may change; anything that makes
the run another run — the model and its options, the data, the global batch, the
precision, the optimizer and its learning rate, micro-batches, the strategy, the loss,
the seed — is compared with the run.json the first run wrote and refused before anything
is built or written, naming each difference (`RunChanged`, exit 2). The checkpoint's
variables are matched one for one at restore (`training.matching`), which also covers
what run.json cannot name (your own model instance).
"""
import json

from mlbench.distribute import strategies
from mlbench.plan import rundir
from mlbench.reprs import recordable
from mlbench.results import codec
from mlbench.results.records import RunIdentity
from mlbench.training.checkpoints import latest_checkpoint

# The arguments a resume may change; every field of RunIdentity may not.
MAY_CHANGE = ("train_steps", "train_epochs", "eval_every", "eval_every_epochs",
              "callbacks", "verbose")


class RunChanged(ValueError):
    """A resume whose configuration differs from the run in its model_dir (exit 2)."""

    def __init__(self, model_dir, changes):
        listed = "; ".join(f"{name} {_shown(old)} → {_shown(new)}"
                           for name, old, new in changes)
        latest = latest_checkpoint(model_dir)
        fine_tune = (f", or, to fine-tune from it, a new `model_dir` with "
                     f"`init_checkpoint={latest}`" if latest else "")
        super().__init__(
            f"`model_dir` ({model_dir!r}) holds another run: {listed}. A model_dir holds "
            f"one run: only its budget (train_steps, train_epochs), eval cadence, "
            f"callbacks and verbosity may change when it resumes. Give another "
            f"`model_dir` for a new run{fine_tune}. Nothing was written.")
        self.model_dir, self.changes = model_dir, changes


def _shown(value):
    return json.dumps(value, sort_keys=True) if not isinstance(value, str) else repr(value)


def identity(plan):
    """The plan's RunIdentity, as JSON values (what run.json holds)."""
    a, record = plan.arguments, plan.rebuild
    facts = strategies.facts(plan.distribution.strategy)
    found = RunIdentity(
        model=_model_name(record.model) if record else None,
        model_options=recordable(dict(plan.model.options)),
        num_classes=plan.model.num_classes,
        data=a.data if isinstance(a.data, str) else None,
        data_options=recordable(dict(a.data_options or {})),
        global_batch_size=plan.distribution.global_batch_size,
        gradient_accumulation_steps=plan.distribution.gradient_accumulation_steps,
        precision=plan.numerics.precision,
        optimizer=_optimizer(plan.objective, a),
        loss=_named(plan.objective.loss), metrics=_named(plan.objective.metrics),
        label_smoothing=plan.objective.label_smoothing,
        strategy=facts["strategy"], replicas=facts["replicas"], seed=plan.seed)
    return codec.decode(RunIdentity, json.loads(json.dumps(codec.encode(found),
                                                           default=str)))


def _model_name(reference):
    """The model's name, or its import path; None for an object with no name."""
    if reference.kind in ("zoo", "registered"):
        return reference.name
    return reference.import_path if reference.kind == "import" else None


def _optimizer(objective, arguments):
    recorded = dict(objective.optimizer_hparams.recorded())
    if "decay_steps" not in (arguments.optimizer_options or {}):
        recorded.pop("decay_steps", None)  # derived from the budget, which may change
    return recordable(recorded)


def _named(value):
    """A loss or metrics value when it is names and plain values; None for objects."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (list, tuple)):
        return [v for v in value] if all(isinstance(v, str) for v in value) else None
    return None


def changes(old, new):
    """[(field, old value, new value)] of the fields that differ, where both are known; a
    mapping (model_options, data_options, optimizer) by each key that differs
    (`optimizer.learning_rate`)."""
    found = []
    for name in codec.encode(new):
        before, after = getattr(old, name), getattr(new, name)
        if before is None or after is None or before == after:
            continue
        if isinstance(before, dict) and isinstance(after, dict):
            found += [(f"{name}.{key}", before.get(key), after.get(key))
                      for key in sorted(set(before) | set(after))
                      if before.get(key) != after.get(key)]
        else:
            found.append((name, before, after))
    return found


def check(plan):
    """Refuses (RunChanged) a plan that would resume another run's model_dir; a run.json
    of a newer mlbench is refused by `rundir.read_sound`; a malformed one is left for the
    run to move aside (the checkpoint match still guards the restore)."""
    model_dir = plan.directory.model_dir
    if not model_dir or not plan.directory.resume or plan.rebuild is None:
        return
    try:
        stored = rundir.read_sound(model_dir)
    except rundir.MalformedRunRecord:
        return  # the run moves it aside when it writes its own (`rundir.write`)
    if stored is None or stored.identity is None or plan.rebuild.identity is None:
        return
    found = changes(stored.identity, plan.rebuild.identity)
    if found:
        raise RunChanged(model_dir, found)
