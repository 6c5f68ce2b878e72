"""`benchmark(...)`: one model × device count × data kind, timed the tf_cnn_benchmarks way.

The same plan → parts → loop path as `train`: `plan_benchmark` resolves the
page's vocabulary into a RunPlan, `parts.build` builds it, and `Loop` runs it
one step per block with `StepTimer` hooks. Warm-up steps (and the trace or
compile in the first of them) never enter the statistics.
"""
import time
from typing import Optional, Union

import tensorflow as tf

from mlbench import data as data_lib
from mlbench import models, optimizers
from mlbench import plan as plan_lib
from mlbench import precision as precision_lib
from mlbench.bench import defaults, environment, stats, variable_update as vu
from mlbench.bench import peak as bench_peak
from mlbench.bench.result import BenchmarkResult
from mlbench.bench.timing import StepTimer
from mlbench.distribute import cluster, strategies
from mlbench.parts import build
from mlbench.training import profile
from mlbench.training.loop import Loop, LoopConfig

DATA_KINDS = ("synthetic", "real")
TRAINING_FLOPS_FACTOR = 3  # forward + backward ≈ 3 × forward (Kaplan et al. 2020)
LEARNING_RATE = 0.005  # small and fixed: benchmark mode times steps, it does not train


def benchmark(model: str, batch_size: Optional[int] = None, num_devices: int = 1,
              variable_update: Optional[str] = None,
              local_parameter_device: Optional[str] = None, all_reduce: str = "auto",
              data: str = "synthetic", data_dir: Optional[str] = None, precision: str = "auto",
              jit_compile: Union[bool, str] = "auto", optimizer: str = "sgd",
              num_warmup_batches: int = 10, num_batches: int = 100, num_runs: int = 5,
              forward_only: bool = False, num_classes: int = 1000, seed: int = 0,
              display_every: int = 10, trace_dir: Optional[str] = None,
              clock=time.perf_counter, verbose: bool = True) -> BenchmarkResult:
    """Images/sec of `model`, as on the TensorFlow benchmarks page.

    Args:
      model: a name from `mlbench.models.list_models()`.
      batch_size: per-device batch (default: the page's, 64; AlexNet 512).
      num_devices: GPUs, else logical CPU devices (tf_cnn_benchmarks' --num_gpus; the CPU
        is split when TensorFlow has not started yet).
      variable_update: parameter_server | replicated | distributed_replicated
        (default: the model's on the DGX-1 page). parameter_server with ps tasks in
        TF_CONFIG times steps scheduled by TF's ClusterCoordinator on the workers; ps and
        worker processes serve. On one host it is CentralStorageStrategy.
      local_parameter_device: 'cpu' | 'gpu' for parameter_server.
      all_reduce: 'auto' | 'nccl' | 'hierarchical_copy' | 'reduction_to_one_device'.
      data: 'synthetic' (on-device tensors) or 'real' (ImageNet TFRecords in `data_dir`).
      precision / jit_compile: as in `train`; 'auto' picks per platform; `ran` records
        what ran (after an XLA refusal, jit_compile False).
      optimizer: 'sgd' (the page's only optimizer).
      num_warmup_batches / num_batches / num_runs: the method (10 / 100 / 5).
      forward_only: time inference instead of training.
      display_every: a `Step  Img/sec` line every this many timed steps.
      trace_dir: a TensorBoard profile of one step goes here; `breakdown` of the result
        says where its time went.
      clock: the timer (tests inject a fake one).

    Returns:
      BenchmarkResult.
    """
    if cluster.server_role():  # a ps or worker task of a parameter-server cluster
        cluster.serve()
    plan, settings = plan_benchmark(
        model, batch_size, num_devices, variable_update, local_parameter_device, all_reduce,
        data, data_dir, precision, jit_compile, optimizer, num_warmup_batches, num_batches,
        num_runs, forward_only, num_classes, seed, trace_dir, verbose)
    log = print if verbose else None
    parts = build(plan)
    timer = StepTimer(num_warmup_batches, plan.global_batch_size, clock, log, display_every)
    compile_s = _timed_steps(plan, parts, timer, 1)[0]
    # The Loop profiles a run's second step (the first may carry a trace or compile).
    traced = trace_dir if num_warmup_batches + num_batches > 1 else None
    runs = []
    for i in range(num_runs):
        if log:
            log(f"run {i + 1}/{num_runs}\nStep\tImg/sec")
        _timed_steps(plan, parts, timer, num_warmup_batches + num_batches,
                     trace_dir=traced if i == 0 else None)
        runs.append(timer.run_stats())
    ran = dict(plan.describe(), jit_compile=parts.step.jit_compile, forward_only=forward_only,
               steps_run=parts.step.steps_run)
    result = _result(plan, settings, runs, compile_s, ran, forward_only)
    if traced:
        result.breakdown = profile.summarize(traced)
    if log:
        log(result.total_line())
        if result.breakdown:
            log(f"profile of one step in {trace_dir}:\n{result.breakdown.table()}")
    return result


def _timed_steps(plan, parts, timer, num_steps, trace_dir=None):
    """Runs `num_steps` more steps, one per block, through the training Loop; with
    `trace_dir`, the second of them is profiled."""
    timer.reset()
    config = LoopConfig(train_steps=parts.step.steps_run + num_steps, steps_per_loop=1,
                        examples_per_step=plan.global_batch_size, log=None,
                        trace_dir=trace_dir)
    Loop(config, parts.step, parts.train_inputs, None, None, timer).run()
    return timer.durations


def plan_benchmark(model, batch_size, num_devices, variable_update, local_parameter_device,
                   all_reduce, data, data_dir, precision, jit_compile, optimizer,
                   num_warmup_batches, num_batches, num_runs, forward_only, num_classes, seed,
                   trace_dir, verbose):
    """Every check of the page's vocabulary, then the RunPlan: (plan, page settings)."""
    settings = _check(model, batch_size, num_devices, variable_update, local_parameter_device,
                      all_reduce, data, data_dir, precision, jit_compile, optimizer,
                      num_warmup_batches, num_batches, num_runs)
    strategy = vu.strategy_for(settings["variable_update"], num_devices,
                               settings["local_parameter_device"], all_reduce)
    info = models.info(model)
    source = _source(data, data_dir, info, num_classes)
    replicas = strategy.num_replicas_in_sync
    global_batch = settings["batch_size"] * replicas
    total_steps = 1 + num_runs * (num_warmup_batches + num_batches)
    plan = plan_lib.RunPlan(
        mode="forward" if forward_only else "train", model=model, model_info=info,
        model_options=_image_size(info, source),
        input_shape=tuple(source.input_shape), source=source, strategy=strategy,
        replicas=replicas, global_batch_size=global_batch, microbatches=1,
        per_replica_batch=settings["batch_size"],
        precision=precision_lib.resolve_precision(precision),
        jit_compile=precision_lib.resolve_jit_compile(jit_compile), train_steps=total_steps,
        steps_per_loop=1, eval_every=0, eval_offset=0, checkpoint_every=0, target=None,
        model_dir=None, resume=False, init_checkpoint=None, optimizer="sgd",
        optimizer_hparams=optimizers.hyperparameters("sgd", LEARNING_RATE, momentum=0.9),
        label_smoothing=0.0, seed=seed, warmup=False, verbose=verbose, trace_dir=trace_dir,
        arguments=dict(model=model, batch_size=settings["batch_size"], data=data))
    return plan, settings


def _check(model, batch_size, num_devices, variable_update, local_parameter_device,
           all_reduce, data, data_dir, precision, jit_compile, optimizer, num_warmup,
           num_batches, num_runs):
    """Every check before anything is built; returns the resolved page defaults."""
    models.info(model)
    default_update, default_device = defaults.variable_update(model)
    update = variable_update or default_update
    device = local_parameter_device or default_device
    vu.validate(update, device)
    _check_devices(num_devices)
    if data not in DATA_KINDS:
        raise ValueError(f"`data` ({data!r}) must be one of {list(DATA_KINDS)}.")
    if data == "real" and not data_dir:
        raise ValueError("`data` 'real' needs `data_dir` (ImageNet-format TFRecords).")
    if optimizer != "sgd":
        raise ValueError(f"`optimizer` ({optimizer!r}): benchmark mode uses 'sgd', as the page.")
    for name, value, low in (("num_batches", num_batches, 1), ("num_runs", num_runs, 1),
                             ("num_warmup_batches", num_warmup, 0)):
        if not isinstance(value, int) or value < low:
            raise ValueError(f"`{name}` ({value!r}) must be an integer >= {low}.")
    precision_lib.resolve_precision(precision)
    precision_lib.resolve_jit_compile(jit_compile)
    strategies.validate_strategy_name("mirrored", all_reduce)
    size = batch_size or defaults.batch_size(model)
    if not isinstance(size, int) or size < 1:
        raise ValueError(f"`batch_size` ({batch_size!r}) must be an integer >= 1.")
    gpus = tf.config.list_physical_devices("GPU")
    return {"batch_size": size, "variable_update": update,
            "local_parameter_device": device if device == "cpu" or gpus else "cpu"}


def _check_devices(num_devices):
    """tf_cnn_benchmarks' --num_gpus: GPUs, else logical CPUs (split while TF has not started)."""
    if not isinstance(num_devices, int) or num_devices < 1:
        raise ValueError(f"`num_gpus` ({num_devices!r}) must be an integer >= 1.")
    strategies.split_cpu(num_devices)
    gpus = tf.config.list_logical_devices("GPU")
    pool = gpus or tf.config.list_logical_devices("CPU")
    if num_devices > len(pool):
        kind = "GPU" if gpus else "logical CPU"
        raise ValueError(f"`num_gpus` ({num_devices!r}) must be between 1 and the {len(pool)} "
                         f"visible {kind} device(s).")


def _source(data, data_dir, info, num_classes):
    if data == "synthetic":
        return data_lib.get("synthetic", model_info=info, num_classes=num_classes)
    return data_lib.get("imagenet", data_dir=data_dir, model_info=info, num_classes=num_classes)


def _image_size(info, source):
    """Real data smaller than the model's default input (tests) sets the model's size."""
    if info.kind != "image" or tuple(source.input_shape) == tuple(info.input_shape):
        return {}
    return {"image_size": source.input_shape[0]}


def _result(plan, settings, runs, compile_s, ran, forward_only):
    across = stats.across_runs([r.total_images_per_sec for r in runs])
    flops, mfu, peak, source = _utilisation(plan, across["mean"], forward_only)
    return BenchmarkResult(model=plan.model, batch_size=settings["batch_size"],
                           num_devices=plan.replicas, data=plan.arguments["data"],
                           variable_update=settings["variable_update"], runs=runs,
                           images_per_sec=across, compile_s=compile_s, ran=ran,
                           flops_per_example=flops, mfu=mfu, peak_flops=peak,
                           peak_source=source, environment=environment.environment())


def _utilisation(plan, images_per_sec, forward_only):
    """(FLOPs per example, MFU, peak FLOP/s, how the peak was obtained)."""
    try:
        flops = models.flops(plan.model) * (1 if forward_only else TRAINING_FLOPS_FACTOR)
    except ValueError as e:  # no FLOPs figure for this model (BERT)
        return None, None, None, str(e)
    peak, how = bench_peak.peak_flops(plan.precision, plan.replicas)
    mfu, how = bench_peak.utilisation(flops * images_per_sec, peak, how)
    return flops, mfu, peak, how
