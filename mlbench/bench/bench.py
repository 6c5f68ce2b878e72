"""`benchmark(...)`: one model × device count × data kind, timed the tf_cnn_benchmarks way.

The same plan → parts → loop path as `train`: `bench.resolve.resolve_benchmark` resolves
the page's vocabulary into a RunPlan, `parts.build` builds it, and `Loop` runs it
one step per block with `StepTimer` hooks. Warm-up steps (and the trace or
compile in the first of them) never enter the statistics.
"""
import dataclasses
import time
from typing import Any, Optional, Union

from mlbench import machine, models, page
from mlbench.bench import peak as bench_peak
from mlbench.bench import stats
from mlbench.plan.arguments import BenchmarkArguments
from mlbench.bench.resolve import resolve_benchmark
from mlbench.results.records import BenchmarkResult
from mlbench.bench.timing import StepTimer
from mlbench.diagnosis import bench as diagnosis_bench
from mlbench.diagnosis import lines as diagnosis_lines
from mlbench.distribute import cluster
from mlbench.plan import parts as parts_lib
from mlbench.plan.parts import build
from mlbench.training import memory as peaks
from mlbench.training import profile
from mlbench.training.cadence import Cadence
from mlbench.training.loop import Loop, LoopConfig

TRAINING_FLOPS_FACTOR = 3  # forward + backward ≈ 3 × forward (Kaplan et al. 2020)


def benchmark(model: Any, batch_size: Optional[int] = None, num_devices: int = 1,
              variable_update: Optional[str] = None,
              local_parameter_device: Optional[str] = None, all_reduce: str = "auto",
              data: Any = "synthetic", data_dir: Optional[str] = None, precision: str = "auto",
              jit_compile: Union[bool, str] = "auto", optimizer: str = "sgd",
              num_warmup_batches: int = 10, num_batches: int = 100, num_runs: int = 5,
              forward_only: bool = False, num_classes: int = 1000, seed: int = 0,
              display_every: int = 10, trace_dir: Optional[str] = None,
              diagnose: bool = False, clock=time.perf_counter,
              verbose: bool = True) -> BenchmarkResult:
    """Images/sec of `model`, as on the TensorFlow benchmarks page.

    Args:
      model: a name from `mlbench.models.list_models()`, or your own: a zero-argument
        function returning a Keras model (tf_keras or Keras 3), or a built one (one device).
      batch_size: per-device batch (default: the page's, 64; AlexNet 512).
      num_devices: GPUs, else logical CPU devices (tf_cnn_benchmarks' --num_gpus; the CPU
        is split when TensorFlow has not started yet).
      variable_update: parameter_server | replicated | distributed_replicated
        (default: the model's on the DGX-1 page). parameter_server with ps tasks in
        TF_CONFIG times steps scheduled by TF's ClusterCoordinator on the workers; ps and
        worker processes serve. On one host it is CentralStorageStrategy.
      local_parameter_device: 'cpu' | 'gpu' for parameter_server.
      all_reduce: 'auto' | 'nccl' | 'hierarchical_copy' | 'reduction_to_one_device'.
      data: 'synthetic' (on-device tensors shaped like the model's input), 'real'
        (ImageNet TFRecords in `data_dir`), or any data `train` takes (a name such as
        'mnist', a DataSource, `(x, y)` arrays, a tf.data.Dataset): the input pipeline
        is then part of every timed step.
      data_dir: ImageNet-format TFRecords for data='real'.
      precision / jit_compile: as in `train`; 'auto' picks per platform; `ran` records
        what ran (after an XLA refusal, jit_compile False).
      optimizer: 'sgd' (the page's only optimizer).
      num_warmup_batches / num_batches / num_runs: the method (10 / 100 / 5).
      forward_only: time inference instead of training.
      num_classes: classes of the model's head (the page's 1000).
      seed: seed of the weights and the synthetic data.
      display_every: a `Step  Img/sec` line every this many timed steps.
      trace_dir: a TensorBoard profile of one step goes here; `breakdown` of the result
        says where its time went.
      diagnose: also time the same model on synthetic data of the same shape (the step
        alone) and, on N > 1 devices, on one device, so the result's `diagnosis` says
        whether the input pipeline or the step sets the pace and where scaling is lost
        (tf_cnn_benchmarks' three measurements). Without it, real data's pipeline is
        still timed alone (a bounded number of batches).
      clock: the timer (tests inject a fake one).

    Returns:
      BenchmarkResult.
    """
    if cluster.server_role():  # a ps or worker task of a parameter-server cluster
        cluster.serve()
    arguments = BenchmarkArguments(
        **{k: v for k, v in locals().items() if k not in ("clock", "display_every")})
    plan, settings = resolve_benchmark(arguments)
    log = print if verbose else None
    parts = build(plan)
    unit = models.unit_of(plan.model.info)
    timer = StepTimer(num_warmup_batches, plan.distribution.global_batch_size, clock, log,
                      display_every, unit)
    compile_s = _timed_steps(plan, parts, timer, 1)[0]
    # The Loop profiles a run's second step (the first may carry a trace or compile).
    traced = trace_dir if num_warmup_batches + num_batches > 1 else None
    runs, memory = [], peaks.reset_peak()
    for i in range(num_runs):
        if log:
            log(f"run {i + 1}/{num_runs}\nStep\t{models.UNIT_ABBREVIATION[unit]}/sec")
        _timed_steps(plan, parts, timer, num_warmup_batches + num_batches,
                     trace_dir=traced if i == 0 else None)
        runs.append(timer.run_stats())
    ran = parts_lib.ran(plan, parts.step, forward_only=forward_only,
                        steps_run=parts.step.steps_run, num_warmup_batches=num_warmup_batches)
    result = dataclasses.replace(
        _result(plan, settings, runs, compile_s, ran, forward_only, parts.model),
        peak_memory_mb=peaks.peak_mb(), memory=memory)
    if traced:
        result = dataclasses.replace(result, breakdown=profile.summarize(traced))
    result = dataclasses.replace(result, diagnosis=diagnosis_bench.findings(
        plan, parts.step, result, lambda **changes: benchmark(**dict(
            arguments.as_dict(), diagnose=False, verbose=False, trace_dir=None, **changes)),
        diagnose,
        published_rates=None if plan.source.on_device else _published_rates(plan)))
    if log:
        log(result.total_line())
        for line in diagnosis_lines(result.diagnosis):
            log(line)
        if result.breakdown:
            log(f"profile of one step in {trace_dir}:\n{result.breakdown.table()}")
    return result


def plan_benchmark(**given):
    """(RunPlan, page settings) that `benchmark(**given)` would run (`mlbench benchmark
    --dry_run`): every check, no model built, no step run."""
    return resolve_benchmark(BenchmarkArguments(**given))


def _published_rates(plan):
    """{platform: one GPU's images/sec of this model on the benchmarks page (its batch-64
    tables)} when the model is one of the page's at its full input size; else None."""
    if plan.model.info.own or tuple(plan.model.input_shape) != tuple(
            plan.model.info.input_shape or ()):
        return None
    rates = {}
    # EC2's K80 is the same GPU as GCE's: one K80 anchor is enough
    for suite, platform in [a for a in page.anchor_suites() if a[0] != "ec2_k80"]:
        reference = page.published(suite).synthetic
        if plan.model.name in reference.get(1, {}):
            rates[platform] = reference[1][plan.model.name]
    return rates or None


def _timed_steps(plan, parts, timer, num_steps, trace_dir=None):
    """Runs `num_steps` more steps, one per block, through the training Loop; with
    `trace_dir`, the second of them is profiled."""
    timer.reset()
    config = LoopConfig(Cadence(parts.step.steps_run + num_steps, steps_per_loop=1), log=None,
                        trace_dir=trace_dir)
    Loop(config, parts.step, parts.train_inputs, None, callbacks=timer).run()
    return timer.durations


def _result(plan, settings, runs, compile_s, ran, forward_only, model):
    across = stats.across_runs([r.total_images_per_sec for r in runs])
    flops, mfu, peak, source = _utilisation(plan, model, across.mean, forward_only)
    return BenchmarkResult(model=plan.model.name, batch_size=settings["batch_size"],
                           num_devices=plan.distribution.replicas, data=plan.arguments.data,
                           variable_update=settings["variable_update"], runs=runs,
                           images_per_sec=across, compile_s=compile_s, ran=ran,
                           flops_per_example=flops, mfu=mfu, peak_flops=peak,
                           peak_source=source, environment=machine.environment(),
                           unit=models.unit_of(plan.model.info))


def _utilisation(plan, model, images_per_sec, forward_only):
    """(FLOPs per example, MFU, peak FLOP/s, how the peak was obtained)."""
    try:
        flops = models.flops_of(plan.model.info, model) * (1 if forward_only
                                                             else TRAINING_FLOPS_FACTOR)
    except ValueError as e:  # no FLOPs figure for this model (BERT)
        return None, None, None, str(e)
    peak, how = bench_peak.peak_flops(plan.numerics.precision, plan.distribution.replicas)
    import tensorflow as tf
    cpu = not tf.config.list_physical_devices("GPU")  # a data-sheet GPU peak is not re-measured
    mfu, how = bench_peak.utilisation(
        flops * images_per_sec, peak, how,
        (lambda: bench_peak.measured_cpu_peak(plan.numerics.precision, refresh=True))
        if cpu else None)
    return flops, mfu, peak, how
