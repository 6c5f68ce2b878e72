"""After the run: load, evaluate and export a `model_dir` from any process, and a sidecar
evaluator that evaluates each new checkpoint while a training job writes them.

Everything is rebuilt from the run's own record (`mlbench.plan.rundir`) through the same plan
and builder as training (`plan.resolve` → `parts.build`, on one device), so the model,
its precision policy, the eval pipeline and the metrics are the run's: an evaluation of a
checkpoint equals the run's own eval at that step on the same data.

Why not Keras' `SidecarEvaluator` or Model Garden's `continuous_eval`: both evaluate a
Keras `compile`d model or an Orbit evaluator; mlbench's eval is its task's counts summed
over replicas, and its checkpoints hold mlbench's (model, optimizer) pair.
"""
import dataclasses
import logging
import os
import time
from typing import Dict, Optional

import numpy as np
import tensorflow as tf

from mlbench import plan as plan_lib
from mlbench.results import files as result_files
from mlbench.plan import rundir
from mlbench.plan.arguments import train_defaults
from mlbench.files import write_json
from mlbench.plan.parts import build
from mlbench.results.records import TrainResult
from mlbench.training import checkpoints, matching

EVALUATIONS = "evaluations"
SIDECAR = "validation_sidecar"  # TensorBoard run of the sidecar evaluator
ENDED = ("finished", "stopped", "interrupted")


@dataclasses.dataclass
class Evaluation:
    """One checkpoint evaluated: its step, path, metrics, and the file written."""
    step: int
    checkpoint: str
    metrics: Dict[str, float]
    path: Optional[str] = None

    def line(self):
        return (f"evaluated step {self.step} ({self.checkpoint}): " +
                "  ".join(f"{k} {v:.4f}" for k, v in self.metrics.items()))


def _rebuilt(model_dir, model=None, data=None, needs_data=True, precision=None):
    """(record, plan, parts) of `model_dir`'s run on one device; nothing restored yet.
    needs_data: False when only the model is wanted (load, export).
    precision: the model built in another precision than it trained in (its variables
      are float32 in every policy, so the checkpoint restores the same)."""
    record = rundir.read(model_dir)
    arguments = rundir.train_arguments(record, train_defaults(), model, data, needs_data)
    if precision is not None:
        arguments = dataclasses.replace(arguments, precision=precision)
    plan = plan_lib.resolve(arguments)
    return record, plan, build(plan)


def checkpoint_path(model_dir, checkpoint=None):
    """The checkpoint `checkpoint` names: None = the latest, 'best' = the kept best (see
    `keep_best`), a step (int), or a path; refused, naming it, when it does not exist."""
    rundir.read(model_dir)  # a missing run is said first
    if checkpoint is None:
        path = checkpoints.latest_checkpoint(model_dir)
    elif checkpoint == "best":
        path = checkpoints.best_checkpoint(model_dir)
        if path is None:
            raise ValueError(f"`checkpoint` ('best'): the run in `model_dir` ({model_dir!r}) "
                             "kept no best checkpoint; train it with keep_best={metric: "
                             "'max' | 'min'} (e.g. {'top1': 'max'}), or give a step.")
    elif isinstance(checkpoint, int) and not isinstance(checkpoint, bool):
        path = os.path.join(checkpoints.directory(model_dir), f"ckpt-{checkpoint}")
    else:
        path = str(checkpoint)
    if not path or not tf.io.gfile.exists(path + ".index"):
        raise ValueError(f"`checkpoint` ({checkpoint!r}) names no checkpoint of `model_dir` "
                         f"({model_dir!r}); expected None (the latest), 'best' (with "
                         "keep_best), a step or a checkpoint path.")
    return path


def step_of(path):
    """The global step in a checkpoint's name (`.../ckpt-120` → 120)."""
    return int(os.path.basename(path).rsplit("-", 1)[1])


def _restore(parts, path):
    # the model's weights alone, each matched (evaluation needs no optimizer state)
    matching.restore_items({"model": parts.model}, path, "Evaluate a checkpoint of the "
                           "run that wrote this model_dir's run.json.")


def _newest_intact(model_dir, parts, checkpoint, path):
    """`path` when a checkpoint was named; else the newest one that reads back whole,
    restored (a reader never moves a run's files: a damaged newest one is named and the
    previous one used)."""
    if checkpoint is not None:
        _restore(parts, path)
        return path
    found = checkpoints.restore_newest_intact(
        model_dir, lambda p: _restore(parts, p), logging.getLogger("mlbench").warning,
        set_aside=False)
    if found is None:
        raise ValueError(f"`model_dir` ({model_dir!r}) holds no checkpoint that can be "
                         "restored (each failed to read back; see the warnings above).")
    return found


def load(model_dir, checkpoint=None, model=None, data=None, precision=None):
    """The run in `model_dir` as a TrainResult, its model restored from a checkpoint.

    Args:
      model_dir: a train run's directory (it holds run.json).
      checkpoint: None (the latest), 'best' (with `keep_best`), a step, or a path.
      model: the model function, when the run's cannot be rebuilt from its record (a
        lambda, a function defined in a notebook, a model instance).
      data: data for the run's input pipeline when its own were arrays or a dataset.
      precision: the model built in this precision (None: as trained), e.g. 'float32'
        to serve a mixed-precision run at full precision.

    Returns:
      TrainResult: the stored result.json's figures (or, for a run still training, its
      record with status 'running'), `model` restored, `loaded_from` = `model_dir`,
      `restored_from` the checkpoint's path.
    """
    path = checkpoint_path(model_dir, checkpoint)
    record, plan, parts = _rebuilt(model_dir, model, data, needs_data=False,
                                   precision=precision)
    path = _newest_intact(model_dir, parts, checkpoint, path)
    stored = result_files.read_if_present("train", model_dir) or TrainResult(
        model=None, status="running", steps=step_of(path), final_metrics={},
        reached_target=False, time_to_quality_s=None, examples_per_second=None,
        history=[], arguments=record.arguments, ran={"precision": record.precision},
        model_dir=model_dir)
    return stored.with_model(parts.model, parts.optimizer, loaded_from=model_dir,
                             restored_from=path, input_spec=record.input_spec)


def evaluate(model_dir, data=None, checkpoint=None, model=None, verbose=True):
    """Evaluates a checkpoint of `model_dir` on the run's eval data (or `data`), prints the
    metrics and writes them to `model_dir/evaluations/<step>.json`.

    Returns:
      Evaluation: step, checkpoint, metrics (mlbench's names, as the run's evals).

    Raises:
      ValueError: no run in `model_dir`, no such checkpoint, or no eval data (the run's
        were arrays: give `data=`), before anything is built.
    """
    path = checkpoint_path(model_dir, checkpoint)
    _, plan, parts = _rebuilt(model_dir, model, data)
    _check_eval(plan, model_dir)
    path = _newest_intact(model_dir, parts, checkpoint, path)  # restored
    evaluation = _evaluate(parts, path, model_dir, data, restored=True)
    if verbose:
        print(evaluation.line())
    return evaluation


def eval_examples(model_dir, precision=None, data=None, checkpoint=None, required=True):
    """(the latest checkpoint's model built under `precision` (None: as trained) and
    restored, the run's eval set as (inputs, labels) arrays, read as its evals read it):
    the samples and reference of inference's accuracy mode. Labels are class indices
    (one-hot labels are turned into them); an eval set of another shape is refused.
    Without an eval set: refused, or (model, None, None) when not `required`."""
    path = checkpoint_path(model_dir, checkpoint)
    _, plan, parts = _rebuilt(model_dir, None, data, needs_data=required, precision=precision)
    if not required and not plan.has_eval:
        _newest_intact(model_dir, parts, checkpoint, path)
        return parts.model, None, None
    _check_eval(plan, model_dir)
    _newest_intact(model_dir, parts, checkpoint, path)  # restored
    inputs, labels = [], []
    for batch in parts.make_eval():
        if not (isinstance(batch, tuple) and len(batch) == 2 and
                all(isinstance(t, tf.Tensor) for t in batch)):
            raise ValueError(f"the eval set of `model_dir` ({model_dir!r}) is not (inputs, "
                             "labels) tensors; accuracy is judged on one-input classifiers.")
        inputs.append(batch[0].numpy())
        labels.append(batch[1].numpy() if batch[1].shape.rank == 1 else
                      batch[1].numpy().argmax(-1))
    return parts.model, np.concatenate(inputs), np.concatenate(labels).astype(np.int64)


def _check_eval(plan, model_dir):
    if not plan.has_eval:
        raise ValueError(f"the run in `model_dir` ({model_dir!r}) has no eval set "
                         f"(data {plan.source.name!r}): give `data=`.")


def _evaluate(parts, path, model_dir, data, restored=False):
    if not restored:
        _restore(parts, path)
    metrics = parts.step.evaluate(parts.make_eval())
    evaluation = Evaluation(step_of(path), path, metrics)
    folder = os.path.join(model_dir, EVALUATIONS)
    os.makedirs(folder, exist_ok=True)
    evaluation.path = os.path.join(folder, f"{evaluation.step}.json")
    with checkpoints.disk_full_named(folder, f"writing {evaluation.path}", advice=(
            "the run's checkpoints are untouched: free space and evaluate again")):
        write_json(evaluation.path, dict(dataclasses.asdict(evaluation),
                                         data=None if data is None else _data_name(data)),
                   indent=1)
    return evaluation


def _data_name(data):
    from mlbench.reprs import short
    return data if isinstance(data, str) else short(data)


def export(model_dir, export_dir, checkpoint=None, model=None, data=None, precision=None):
    """Writes a checkpoint's model as a SavedModel with a serving signature
    (`tf.saved_model.load(export_dir).signatures['serving_default']`), in `precision`
    (None: as trained; 'float32' serves a mixed-precision run at full precision)."""
    if os.path.exists(export_dir) and os.listdir(export_dir):
        raise ValueError(f"`export_dir` ({export_dir!r}) is not empty; give a new directory.")
    return load(model_dir, checkpoint, model, data, precision).export(export_dir)


def watch(model_dir, data=None, model=None, timeout=None, poll_s=1.0, verbose=True):
    """A sidecar evaluator: evaluates every new checkpoint of `model_dir` exactly once,
    oldest first, while another process trains there (any strategy), and logs each to
    TensorBoard (`model_dir/validation_sidecar`) and `evaluations/<step>.json`.

    It waits for the run to start (its run.json), and stops when the run's result.json says
    it ended (finished, stopped or interrupted) and every checkpoint up to its last step is
    evaluated, or after `timeout` seconds.

    Returns:
      [Evaluation] in the order they were made.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    while not os.path.exists(os.path.join(model_dir, rundir.FILE)):
        if _past(deadline):
            raise TimeoutError(f"no run started in `model_dir` ({model_dir!r}) within "
                               f"{timeout} s (no {rundir.FILE}).")
        time.sleep(poll_s)
    _, plan, parts = _rebuilt(model_dir, model, data)
    _check_eval(plan, model_dir)
    writer = tf.summary.create_file_writer(os.path.join(model_dir, SIDECAR))
    done, evaluations = set(), []
    while True:
        ended = _ended(model_dir)  # read before listing: no checkpoint written after it
        for path in _new_checkpoints(model_dir, done):
            evaluation = _evaluate_once(parts, path, model_dir, data, writer)
            done.add(path)
            if evaluation is not None:
                evaluations.append(evaluation)
                if verbose:
                    print(evaluation.line(), flush=True)
        if ended or _past(deadline):
            _name_missed(model_dir, done, verbose)
            return evaluations
        time.sleep(poll_s)


def _name_missed(model_dir, done, verbose):
    """Names the checkpoint steps the run wrote (by its cadence, in run.json) that the
    sidecar never saw: written and removed between two of its polls."""
    plan = rundir.read(model_dir).cadence
    summary = result_files.read_if_present("train", model_dir)
    if plan is None or not summary:
        return []
    seen = {step_of(p) for p in done}
    first = (summary.resumed_from_step or 0) + 1
    missed = [s for s in range(first, summary.steps + 1)
              if plan.checkpoint_due(s) and s not in seen]
    if missed and verbose:
        print(f"not evaluated: checkpoint step(s) {missed}, written and removed by the "
              "training job between two polls (it keeps the last "
              f"{checkpoints.KEEP} only)", flush=True)
    return missed


def _past(deadline):
    return deadline is not None and time.monotonic() >= deadline


def _new_checkpoints(model_dir, done):
    state = tf.train.get_checkpoint_state(checkpoints.directory(model_dir))
    paths = list(state.all_model_checkpoint_paths) if state else []
    return sorted((p for p in paths if p not in done), key=step_of)


def _evaluate_once(parts, path, model_dir, data, writer):
    """Evaluates `path`; None when the training job deleted it first (it keeps the last
    few only): the sidecar fell behind, and says so."""
    try:
        evaluation = _evaluate(parts, path, model_dir, data)
    except (tf.errors.NotFoundError, ValueError):
        if tf.io.gfile.exists(path + ".index"):
            raise
        print(f"skipped {path}: removed by the training job before it was evaluated",
              flush=True)
        return None
    with writer.as_default(step=evaluation.step):
        for name, value in evaluation.metrics.items():
            tf.summary.scalar(name, value)
        tf.summary.scalar("loss", evaluation.metrics.get("eval_loss", float("nan")))
    writer.flush()
    return evaluation


def _ended(model_dir):
    """The run's result.json says it ended, and it is this run's (written after the run
    started: a resumed run's old result.json is older than its run.json)."""
    result = result_files.path_of("train", model_dir)
    if not os.path.exists(result):
        return False
    if os.path.getmtime(result) < os.path.getmtime(os.path.join(model_dir, rundir.FILE)):
        return False
    return result_files.read(result, "train")[2].status in ENDED
