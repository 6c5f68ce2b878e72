"""`run(plan, callbacks) -> TrainResult`: a resolved plan's parts driven by the Loop.

The path every training run takes after `mlbench.plan.resolve` (`train`,
`mlbench mlperf`): build the parts, say if it resumed, run the loop, record
what ran (read from the step after it ran) and write result.json.
"""
import contextlib
import logging
import os
import re
import shutil
import signal
import tempfile

import tensorflow as tf

from mlbench import config as gin_config
from mlbench.results import files as result_files
from mlbench.plan import rundir
from mlbench.machine import environment
from mlbench.data.tfrecords import locate_corruption
from mlbench.diagnosis import lines as diagnosis_lines
from mlbench.diagnosis import run as diagnosis_run
from mlbench.distribute import cluster, heartbeat, strategies
from mlbench.plan import parts as parts_lib
from mlbench.plan.parts import build
from mlbench.results.records import TrainResult
from mlbench.training.checkpoints import KeepBest, disk_full_named, latest_checkpoint
from mlbench.training.interrupt import RunInterrupted
from mlbench.training import callbacks as callbacks_lib
from mlbench.training import dirlock
from mlbench.training import memory as peaks
from mlbench.training.loop import Loop, LoopConfig, outputs_for, target_met
from mlbench.training.progress import Progress
from mlbench.training.warmup import make_warmup


class WorkerLostError(RuntimeError):
    """Another worker stopped answering (died, froze or lost its network)."""

    def __init__(self, error):
        first = (error.message or str(error)).strip().splitlines()[0]
        super().__init__(
            f"training stopped: another worker stopped answering ({type(error).__name__}: "
            f"{first}). Collectives wait at most the collective timeout of "
            f"{strategies.collective_timeout_s():g} s (MLBENCH_COLLECTIVE_TIMEOUT_S), and "
            "TensorFlow's coordination service reports workers that miss heartbeats.")


class ParameterServerLostError(RuntimeError):
    """A parameter server stopped answering: its variables are gone, the run cannot go on."""

    def __init__(self, error):
        text = error.message or str(error)
        tasks = sorted(set(re.findall(r"/job:ps/replica:\d+/task:(\d+)", text)), key=int)
        named = ", ".join(f"ps {t}" for t in tasks) or "a parameter server"
        super().__init__(
            f"training stopped: {named} stopped answering ({type(error).__name__}); the "
            "variables it held are lost. Start the job again: the chief resumes from its "
            "last checkpoint in model_dir.")


def writable_model_dir(model_dir):
    """The chief's model_dir (created); other workers get a private temporary one.

    Under MultiWorkerMirroredStrategy every worker must take part in saving
    (the save is collective), so non-chief workers save too, but only to
    throw-away directories (TF's recommended pattern).
    """
    if not model_dir:
        return None
    if not cluster.is_chief():
        return tempfile.mkdtemp(prefix="mlbench_worker_")
    os.makedirs(model_dir, exist_ok=True)
    return model_dir


def run(plan, callbacks=None):
    """Runs a resolved plan to its TrainResult (the `train` path after `resolve`).

    A run that already finished in `model_dir` is reported from its result.json (left
    byte-identical); more `train_steps` continue it and append to its history.

    Raises:
      RunInterrupted: SIGINT/SIGTERM stopped the run (checkpoint and result.json saved).
    """
    progress = (Progress(plan.cadence.train_steps, plan.distribution.global_batch_size)
                if plan.verbose else None)
    model_dir = writable_model_dir(plan.directory.model_dir)
    with progress or contextlib.nullcontext():  # closed however the run ends
        with _owned(model_dir, plan.directory.model_dir,
                    progress.write if progress else logging.getLogger("mlbench").warning):
            return _run(plan, callbacks, progress, model_dir)


@contextlib.contextmanager
def _owned(model_dir, asked, log):
    """The chief holds its model_dir's lock for the run (one writer per directory); a
    worker's throw-away directory is removed when the run ends, however it ends."""
    if model_dir is None:
        yield
    elif model_dir != asked:
        try:
            yield
        finally:
            shutil.rmtree(model_dir, ignore_errors=True)
    else:
        with dirlock.held(model_dir, log):
            yield


def _run(plan, callbacks, progress, model_dir):
    log = progress.write if progress else None
    with _causes_named(plan):  # building places variables on a ps that may already be gone
        parts = build(plan, log=log or logging.getLogger("mlbench").warning)
    stored = stored_result(plan, parts)
    if stored is not None and finished(stored, plan):
        return _report_stored(stored, parts, plan)
    if parts.resumed_from and log:
        log(f"resumed from step {parts.resumed_from_step} ({parts.resumed_from})")
    if log:
        log(learning_rate_line(plan.objective))
    budgets = budgets_of(stored, plan.cadence.train_steps)
    if len(budgets) > 1 and budgets[-1] != budgets[-2] and log:
        log(f"the run's budget changed from {budgets[-2]} to {budgets[-1]} steps "
            "(recorded in result.json's budgets)")
    config = _loop_config(plan, parts, log, progress)
    beat = heartbeat.for_this_task()  # under `mlbench launch`: the launcher reads it
    diagnosis = diagnosis_run.RunDiagnosis(plan, parts)
    listeners = callbacks_lib.for_run([diagnosis] + list(callbacks or ())
                                      + _keep_best(plan, parts, model_dir)
                                      + ([beat] if beat else []))
    listeners.set_model(parts.model)
    loop = Loop(config, parts.step, parts.train_inputs, parts.make_eval,
                outputs_for(model_dir, parts.checkpoint), listeners)
    with disk_full_named(model_dir or ".", "writing the run's record (run.json, its gin "
                         "config and hparams)", lambda: latest_checkpoint(model_dir)):
        gin_config.write(model_dir)
        rundir.write(model_dir, plan, log or logging.getLogger("mlbench").warning)
        write_hparams(model_dir, plan)
    with _causes_named(plan):  # the pipeline timed alone may meet a corrupt shard first
        loop.callbacks.on_configured(configured_info(plan))
        memory = peaks.reset_peak()
        outcome = loop.run()
        peak = peaks.peak_mb()
    gin_config.write_operative(model_dir)
    ran = parts_lib.ran(plan, parts.step, optimizer=plan.objective.optimizer_hparams.recorded())
    earlier = stored.history if stored is not None else []
    result = _result(outcome, parts, plan, ran, model_dir, earlier,
                     diagnosis.findings(outcome), budgets, (peak, memory))
    if outcome.interrupted is not None:
        raise _interrupted(outcome.interrupted, result, model_dir)
    return result


def _keep_best(plan, parts, model_dir):
    if not (plan.cadence.keep_best and model_dir):
        return []
    return [KeepBest(parts.checkpoint, model_dir, plan.cadence.keep_best,
                     parts.step.state_variables)]


def stored_result(plan, parts):
    """The result.json of the run this one resumes (its steps = the checkpoint's), or None."""
    model_dir = plan.directory.model_dir
    stored = result_files.read_if_present("train", model_dir) if model_dir else None
    if not parts.resumed_from or stored is None:
        return None
    return stored if stored.steps == parts.resumed_from_step else None


def finished(stored, plan):
    """A stored run is finished for this plan when it ran every step asked for now, or it
    met the target asked for now."""
    if stored.status == "interrupted":
        return False
    if stored.status == "stopped":  # by a callback: finished for the same length
        planned = stored.steps if stored.planned_steps is None else stored.planned_steps
        return plan.cadence.train_steps <= planned
    return stored.steps >= plan.cadence.train_steps or bool(
        stored.reached_target and target_met(stored.final_metrics, plan.cadence.target))


def _report_stored(stored, parts, plan):
    """The finished run's result as stored, marked as loaded; nothing is written."""
    result = stored.with_model(parts.model, parts.optimizer,
                               loaded_from=plan.directory.model_dir,
                               resumed_from_step=stored.steps)
    if plan.verbose:
        print(f"the run in {plan.directory.model_dir} already "
              f"{'stopped' if stored.status == 'stopped' else 'finished'} at step "
              f"{stored.steps}: "
              "reporting its result.json (unchanged); give more train_steps to continue "
              "it, or a new model_dir for a new run")
        print(format_summary(result))
    return result


def _interrupted(signum, result, model_dir):
    where = (f"checkpoint {latest_checkpoint(model_dir)}" if model_dir
             else "no checkpoint (no model_dir)")
    line = (f"interrupted ({signal.Signals(signum).name}) at step {result.steps}; {where}; "
            "run the same command to resume")
    print(line, flush=True)
    return RunInterrupted(signum, result, line)


@contextlib.contextmanager
def _causes_named(plan):
    """TF errors that name no cause, raised while building or running, become errors that do."""
    try:
        yield
    except tf.errors.DataLossError as e:
        raise locate_corruption(plan.source, e) from e
    except (tf.errors.DeadlineExceededError, tf.errors.UnavailableError,
            tf.errors.CancelledError) as e:
        strategy = plan.distribution.strategy
        if strategies.is_parameter_server(strategy):
            raise ParameterServerLostError(e) from e  # lost workers are rescheduled by TF
        if plan.distribution.replicas == len(strategies.worker_devices(strategy)):
            raise  # one process: not a lost peer
        raise WorkerLostError(e) from e


def _loop_config(plan, parts, log, progress):
    split = plan.distribution
    warmup = make_warmup(split.strategy, parts.step, parts.train_inputs, parts.make_eval,
                         split.per_replica_batch) if plan.warmup else None
    return LoopConfig(plan.cadence, log=log, progress=progress, warmup=warmup,
                      trace_dir=plan.directory.trace_dir)


def write_hparams(model_dir, plan):
    """The run's hyperparameters for TensorBoard's hparams plugin, at the run's root: the
    plugin takes a directory holding them as one session, and the scalars of its
    subdirectories (`train/`, `validation/`) as that session's metrics."""
    if not model_dir:
        return
    from tensorboard.plugins.hparams import api as hparams_api
    split = plan.distribution
    values = dict(model=plan.model.name, global_batch_size=split.global_batch_size,
                  gradient_accumulation_steps=split.gradient_accumulation_steps,
                  precision=plan.numerics.precision, jit_compile=plan.numerics.jit_compile,
                  optimizer=plan.objective.optimizer,
                  learning_rate=float(plan.objective.optimizer_hparams.learning_rate),
                  train_steps=plan.cadence.train_steps, seed=plan.seed,
                  replicas=split.replicas, strategy=type(split.strategy).__name__)
    with tf.summary.create_file_writer(model_dir).as_default():
        hparams_api.hparams(values)


def configured_info(plan):
    """What callbacks (the MLPerf logger, Keras callbacks) learn before the run starts."""
    return callbacks_lib.RunInfo(
        model=plan.model.name, global_batch_size=plan.distribution.global_batch_size,
        gradient_accumulation_steps=plan.distribution.gradient_accumulation_steps,
        train_steps=plan.cadence.train_steps, eval_every=plan.cadence.eval_every,
        epoch_steps=plan.cadence.epoch_steps,
        num_train_examples=plan.source.num_train_examples,
        num_eval_examples=plan.source.num_eval_examples, seed=plan.seed,
        optimizer=plan.objective.optimizer_hparams, target=plan.cadence.target,
        label_smoothing=plan.objective.label_smoothing)


def learning_rate_line(objective):
    """The rate the run starts from and the rule that gave it (printed at start)."""
    return (f"learning rate {float(objective.optimizer_hparams.learning_rate):.6g} "
            f"({objective.optimizer}): {objective.sources.get('learning_rate', '?')}")


def budgets_of(stored, planned):
    """Every length in steps the run was asked for, when a resume changed it: the stored
    result's (or its one planned length), then `planned` if it differs; else []."""
    earlier = list(stored.budgets or ([stored.planned_steps] if stored.planned_steps
                                      else [])) if stored is not None else []
    if earlier and earlier[-1] != planned:
        return earlier + [planned]
    return earlier if len(earlier) > 1 else []


def _result(outcome, parts, plan, ran, model_dir, earlier_history=(), diagnosis=(),
            budgets=(), peak_memory=(None, "")):
    ttq, note = outcome.time_to_quality_s, None
    if parts.resumed_from and ttq is not None:
        ttq, note = None, (f"resumed from step {parts.resumed_from_step}: the clock of a "
                           "resumed run is not a time to quality")
    result = TrainResult(
        model=parts.model, optimizer=parts.optimizer, final_metrics=outcome.final_metrics,
        reached_target=outcome.reached_target, time_to_quality_s=ttq,
        time_to_quality_note=note, resumed_from_step=parts.resumed_from_step,
        steps=outcome.steps, examples_per_second=outcome.examples_per_second,
        history=list(earlier_history) + outcome.history,
        arguments=plan.arguments.recorded(), ran=ran,
        model_dir=model_dir, compile_s=outcome.compile_s, skipped_steps=outcome.skipped_steps,
        run_seconds=outcome.run_seconds,
        status=_status(outcome), planned_steps=plan.cadence.train_steps,
        budgets=list(budgets),
        environment=environment(), diagnosis=list(diagnosis),
        input_spec=plan.rebuild.input_spec if plan.rebuild else None,
        peak_memory_mb=peak_memory[0], memory=peak_memory[1])
    if model_dir:
        with disk_full_named(model_dir, "writing result.json",
                             lambda: latest_checkpoint(model_dir)):
            result_files.write(model_dir, result)
    if plan.verbose and outcome.interrupted is None:
        print(format_summary(result))
    return result


def _status(outcome):
    if outcome.interrupted is not None:
        return "interrupted"
    return "stopped" if outcome.stopped and not outcome.reached_target else "finished"


def format_summary(result):
    ttq = (f"{result.time_to_quality_s:.1f}s" if result.time_to_quality_s is not None
           else result.time_to_quality_note or "not reached")
    eps = result.examples_per_second
    return (f"RESULT reached_target={result.reached_target} time_to_quality={ttq} "
            f"steps={result.steps} examples/sec={eps if eps is None else round(eps, 1)} "
            f"metrics={ {k: round(v, 4) for k, v in result.final_metrics.items()} } "
            f"ran={ {k: v for k, v in result.ran.items() if k != 'optimizer'} }" +
            "".join(f"\n{line}" for line in diagnosis_lines(result.diagnosis)))
