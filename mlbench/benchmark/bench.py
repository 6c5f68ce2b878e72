"""`benchmark(...)`: one model × device count × data kind, timed the tf_cnn_benchmarks way."""
import time

import tensorflow as tf
import tf_keras as keras

from mlbench import data as data_lib
from mlbench import distribute, models
from mlbench import precision as precision_lib
from mlbench.benchmark import defaults, environment, runner, stats
from mlbench.benchmark.result import BenchmarkResult

DATA_KINDS = ("synthetic", "real")
TRAINING_FLOPS_FACTOR = 3  # forward + backward ≈ 3 × forward (Kaplan et al. 2020)


def benchmark(model, batch_size=None, num_devices=1, variable_update=None,
              local_parameter_device=None, all_reduce="auto", data="synthetic", data_dir=None,
              precision="auto", jit_compile="auto", optimizer="sgd", num_warmup_batches=10,
              num_batches=100, num_runs=5, forward_only=False, num_classes=1000, seed=0,
              clock=time.perf_counter, verbose=True):
    """Images/sec of `model`, as on the TensorFlow benchmarks page.

    Args:
      model: a name from `mlbench.models.list_models()`.
      batch_size: per-device batch (default: the page's, 64; AlexNet 512).
      num_devices: GPUs, else logical CPU devices (tf_cnn_benchmarks' --num_gpus).
      variable_update: parameter_server | replicated | distributed_replicated
        (default: the model's on the DGX-1 page).
      local_parameter_device: 'cpu' | 'gpu' for parameter_server.
      all_reduce: 'auto' | 'nccl' | 'hierarchical_copy' | 'reduction_to_one_device'.
      data: 'synthetic' (on-device tensors) or 'real' (ImageNet TFRecords in `data_dir`).
      precision / jit_compile: as in `train`; 'auto' picks per platform and is recorded.
      optimizer: 'sgd' (the page's only optimizer).
      num_warmup_batches / num_batches / num_runs: the method (10 / 100 / 5).
      forward_only: time inference instead of training.
      clock: the timer (tests inject a fake one).

    Returns:
      BenchmarkResult.
    """
    config = _validate(model, batch_size, num_devices, variable_update, local_parameter_device,
                       all_reduce, data, data_dir, precision, jit_compile, optimizer,
                       num_warmup_batches, num_batches, num_runs)
    strategy = distribute.from_variable_update(config["variable_update"], num_devices,
                                               config["local_parameter_device"], all_reduce)
    info = models.info(model)
    source = _source(data, data_dir, info, num_classes)
    policy = precision_lib.resolve_precision(precision)
    jit = precision_lib.resolve_jit_compile(jit_compile)
    global_batch = config["batch_size"] * strategy.num_replicas_in_sync
    keras.utils.set_random_seed(seed)
    step = runner.build_step(strategy, model, source, policy, jit, global_batch, forward_only)
    inputs = runner.inputs_for(strategy, source, config["batch_size"], seed)
    log = print if verbose else (lambda _: None)
    runs, compile_s = _runs(step, inputs, num_warmup_batches, num_batches, num_runs, global_batch,
                            clock, log)
    ran = dict(precision=policy, jit_compile=jit, forward_only=forward_only,
               steps_run=_steps_run(step), **distribute.describe(strategy))
    result = _result(model, config, num_devices, data, runs, compile_s, ran, policy, forward_only)
    log(result.total_line())
    return result


def _validate(model, batch_size, num_devices, variable_update, local_parameter_device,
              all_reduce, data, data_dir, precision, jit_compile, optimizer, num_warmup,
              num_batches, num_runs):
    """Every check before a model is built; returns the resolved defaults."""
    models.info(model)
    default_update, default_device = defaults.variable_update(model)
    variable_update = variable_update or default_update
    if variable_update not in distribute.VARIABLE_UPDATES:
        raise ValueError(f"`variable_update` ({variable_update!r}) must be one of "
                         f"{list(distribute.VARIABLE_UPDATES)}.")
    device = local_parameter_device or default_device
    if device not in ("cpu", "gpu"):
        raise ValueError(f"`local_parameter_device` ({device!r}) must be 'cpu' or 'gpu'.")
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
    distribute.validate_strategy_name("mirrored", all_reduce)
    size = batch_size or defaults.batch_size(model)
    if not isinstance(size, int) or size < 1:
        raise ValueError(f"`batch_size` ({batch_size!r}) must be an integer >= 1.")
    return {"batch_size": size, "variable_update": variable_update,
            "local_parameter_device": device if device == "cpu" or _gpus() else "cpu"}


def _gpus():
    return tf.config.list_logical_devices("GPU")


def _check_devices(num_devices):
    pool = _gpus() or tf.config.list_logical_devices("CPU")
    kind = "GPU" if _gpus() else "logical CPU"
    if not isinstance(num_devices, int) or not 1 <= num_devices <= len(pool):
        raise ValueError(f"`num_gpus` ({num_devices!r}) must be between 1 and the {len(pool)} "
                         f"visible {kind} device(s).")


def _source(data, data_dir, info, num_classes):
    if data == "synthetic":
        return data_lib.get("synthetic", model_info=info, num_classes=num_classes)
    return data_lib.get("imagenet", data_dir=data_dir, model_info=info, num_classes=num_classes)


def _runs(step, inputs, num_warmup, num_batches, num_runs, global_batch, clock, log):
    """The first warm-up step (trace/compile) is timed apart; then `num_runs` runs."""
    start = clock()
    runner.time_steps(step, inputs, 1, clock)
    compile_s = clock() - start
    runs = []
    for i in range(num_runs):
        log(f"run {i + 1}/{num_runs}\nStep\tImg/sec")
        run, _ = runner.run_once(step, inputs, num_warmup, num_batches, global_batch, clock, log)
        runs.append(run)
    return runs, compile_s


def _steps_run(step):
    """Optimizer updates done (warm-up included); None for forward-only timing."""
    optimizer = getattr(step, "optimizer", None)
    return int(optimizer.iterations.numpy()) if optimizer is not None else None


def _result(model, config, num_devices, data, runs, compile_s, ran, policy, forward_only):
    across = stats.across_runs([r.total_images_per_sec for r in runs])
    flops, mfu, peak, source = None, None, None, ""
    try:
        flops = models.flops(model) * (1 if forward_only else TRAINING_FLOPS_FACTOR)
        peak, source = environment.peak_flops(policy, num_devices)
        mfu = flops * across["mean"] / peak if peak else None
    except ValueError:
        pass
    return BenchmarkResult(model=model, batch_size=config["batch_size"], num_devices=num_devices,
                           data=data, variable_update=config["variable_update"], runs=runs,
                           images_per_sec=across, compile_s=compile_s, ran=ran,
                           flops_per_example=flops, mfu=mfu, peak_flops=peak,
                           peak_source=source, environment=environment.environment())
