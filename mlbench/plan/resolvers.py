"""Resolvers shared by `resolve` (train, mlperf) and `resolve_benchmark`: the model part,
the numerics, the distribution, a model instance's strategy."""
import tensorflow as tf

from mlbench import models
from mlbench.models import precision as precision_lib
from mlbench.plan.record import Distribution, ModelPlan, Numerics
from mlbench.reprs import short


def model_plan(info, options, source):
    """The model part: its factory options (with the data's vocabulary or width where the
    model takes them), its input shape, and its classifier width."""
    return ModelPlan(info.name, info, _model_options(info, options, source),
                     model_input_shape(info, options, source),
                     info.output_width or max(source.num_classes, 1))


def numerics(info, precision, jit_compile):
    return Numerics(resolve_precision(info, precision),
                    precision_lib.resolve_jit_compile(jit_compile))


def distribution(info, strategy, global_batch_size, gradient_accumulation_steps):
    """`global_batch_size` (already checked divisible) over the strategy's replicas."""
    replicas = strategy.num_replicas_in_sync
    return Distribution(instance_strategy(info, strategy), replicas, global_batch_size,
                        gradient_accumulation_steps, global_batch_size // replicas)


def resolve_precision(info, precision):
    """'auto' for a model instance means the policy it was built under."""
    if info.instance is not None and precision == "auto":
        return info.policy
    return precision_lib.resolve_precision(precision)


def instance_strategy(info, strategy):
    """A model instance's variables belong to the default strategy (made outside any
    scope): its optimizer and steps must live there too (another one-device strategy's
    scope refuses to make its optimizer slots)."""
    return tf.distribute.get_strategy() if info.instance is not None else strategy


def model_input_shape(info, model_options, source):
    """The model's input shape: its registry shape, or the `image_size` the user set.

    Image data of another shape is adapted to it (resized, channels repeated or
    averaged), as tf_cnn_benchmarks resized ImageNet to each model's size.
    """
    if info.own:
        return _own_input_shape(info, source)
    if info.kind != "image":
        if info.kind == "vector" and source.kind == "vector":
            return tuple(source.input_shape)
        if info.kind == "vector" and source.kind == "image":
            return (_flat_size(source.input_shape),)  # images flattened, as a user expects
        if source.kind != info.kind:
            raise ValueError(f"`data` ({source.name!r}, {source.kind} examples of shape "
                             f"{tuple(source.input_shape)}) does not fit `model` "
                             f"({info.name!r}), which takes {info.kind} inputs.")
        return tuple(info.input_shape)
    if source.kind != "image":
        raise ValueError(f"`data` ({source.name!r}, {source.kind} examples of shape "
                         f"{tuple(source.input_shape)}) does not fit `model` ({info.name!r}), "
                         f"which takes images of shape {tuple(info.input_shape)}.")
    size = model_options.get("image_size")
    height, width, channels = info.input_shape
    return (size, size, channels) if size else (height, width, channels)


def _flat_size(shape):
    """Values per example: an image of (8, 8, 1) is a vector of 64."""
    size = 1
    for dim in shape:
        size *= int(dim)
    return size


def _own_input_shape(info, source):
    """Your own model's input shape, and data that fits it (images are adapted)."""
    spec = getattr(source, "train_element_spec", None)
    features = spec[0] if spec is not None else None
    if (info.input_shape is not None and isinstance(features, tf.TensorSpec)
            and features.shape.rank == len(info.input_shape) + 1):
        raise ValueError(f"`data` yields batches (features of shape {features.shape}) for "
                         f"`model` ({info.name!r}), which takes examples of shape "
                         f"{info.input_shape}: give the dataset unbatched, or say it "
                         "yields batches with data_options={'batched': True} "
                         "(`mlbench.fit` takes batched datasets, as `model.fit` does).")
    if info.input_shape is None or source.input_shape is None:
        return info.input_shape or source.input_shape
    fits = tuple(source.input_shape) == tuple(info.input_shape)
    if not fits and not (info.kind == "image" and source.kind == "image"):
        raise ValueError(f"`data` ({short(source)}, examples of shape "
                         f"{tuple(source.input_shape)}) does not fit `model` ({info.name!r}), "
                         f"which takes inputs of shape {tuple(info.input_shape)}.")
    return tuple(info.input_shape)


def _model_options(info, model_options, source):
    options = dict(model_options)
    if info.own:
        if model_options and info.source == models.own.SOURCE:
            raise ValueError(f"`model_options` ({model_options!r}): your own model "
                             f"({info.name!r}) takes none; build it as you want it.")
        return options
    if info.kind == "bert" and getattr(source, "vocab_size", None):
        options.setdefault("vocab_size", source.vocab_size)  # the data's vocabulary
    if info.kind == "vector":
        options.setdefault("input_dim", _flat_size(source.input_shape))
    return options
