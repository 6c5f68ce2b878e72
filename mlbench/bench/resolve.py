"""`resolve_benchmark(arguments) -> (RunPlan, page settings)`: benchmark mode in the
page's vocabulary (variable_update, its default batch sizes), through the same resolvers
and checks as `resolve`."""
import dataclasses

import tensorflow as tf

from mlbench import data as data_lib
from mlbench import models, page
from mlbench.training import optimizers
from mlbench.distribute import strategies
from mlbench.distribute import variable_update as vu
from mlbench.plan import checks, resolvers
from mlbench.plan.record import Cadence, Objective, RunDirectory, RunPlan

BENCHMARK_LEARNING_RATE = 0.005  # small and fixed: benchmark mode times steps, it does not train


def resolve_benchmark(arguments):
    """Checks `mlbench.benchmark`'s arguments and returns (RunPlan, page settings).

    The same resolvers as `resolve` (model, strategy, data, precision, input shape);
    the page's vocabulary adds `variable_update` → strategy and its default batch sizes.
    """
    a = arguments
    checks.check_benchmark_scalars(a)
    info = models.resolve(a.model)
    update, device = _page_update(info.name, a)
    strategy = vu.strategy_for(update, a.num_devices, device, a.all_reduce)
    checks.check_instance(info, strategy, a.precision)
    source = _benchmark_source(a, info)
    size = a.batch_size or page.batch_size(info.name)
    steps = 1 + a.num_runs * (a.num_warmup_batches + a.num_batches)
    plan = RunPlan(
        mode="forward" if a.forward_only else "train",
        model=resolvers.model_plan(info, _benchmark_model_options(info, a.data, source),
                                   source),
        source=source,
        distribution=resolvers.distribution(info, strategy,
                                            size * strategy.num_replicas_in_sync, 1),
        numerics=resolvers.numerics(info, a.precision, a.jit_compile),
        cadence=Cadence(steps, steps_per_loop=1, eval_every=0, eval_offset=0,
                        checkpoint_every=0, target=None),
        directory=RunDirectory(None, resume=False, init_checkpoint=None,
                               trace_dir=a.trace_dir),
        objective=Objective("sgd", optimizers.hyperparameters(
            "sgd", BENCHMARK_LEARNING_RATE, momentum=0.9), label_smoothing=0.0, loss=None,
            metrics=None),
        seed=a.seed, warmup=False, verbose=a.verbose,
        arguments=dataclasses.replace(a, batch_size=size))
    return plan, {"batch_size": size, "variable_update": update,
                  "local_parameter_device": device}


def _page_update(name, a):
    """(variable_update, local_parameter_device): the page's for the model unless given;
    'gpu' means the first accelerator, so without one it is the CPU."""
    default_update, default_device = page.variable_update(name)
    update = a.variable_update or default_update
    device = a.local_parameter_device or default_device
    vu.validate(update, device)
    strategies.devices(a.num_devices)  # a clear error before any strategy exists
    gpus = tf.config.list_physical_devices("GPU")
    return update, device if device == "cpu" or gpus else "cpu"


def _benchmark_source(a, info):
    """'synthetic' (on-device tensors shaped like the model's input), 'real' (ImageNet
    TFRecords in `data_dir`, the page's word), or any data `train` takes."""
    if a.data == "synthetic":
        if info.input_shape is None:
            raise ValueError(f"`model` ({info.name!r}) has no fixed input shape to shape "
                             "synthetic data from; register it with `input_shape=`, or "
                             "give `data`.")
        classes = info.output_width or a.num_classes
        return data_lib.get("synthetic", model_info=info, num_classes=classes)
    name = "imagenet" if a.data == "real" else a.data
    return data_lib.get(name, data_dir=a.data_dir, model_info=info,
                        num_classes=a.num_classes)


def _benchmark_model_options(info, data, source):
    """Test-sized 'real' records smaller than the model's default input set its size."""
    if (data != "real" or info.kind != "image" or info.own
            or tuple(source.input_shape) == tuple(info.input_shape)):
        return {}
    return {"image_size": source.input_shape[0]}
