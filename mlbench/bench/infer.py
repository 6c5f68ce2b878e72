"""`infer(model, ...) -> InferenceResult`: inference latency and throughput over a batch
sweep, measured the MLPerf LoadGen way (`mlbench.bench.latency`).

Per batch size: a forward pass (`training=False`) compiled once as a `tf.function` (with
XLA when asked), inputs made on the device before timing (synthetic, shaped as the
model's input: no disk or host copy in the figure), `num_warmup_batches` untimed, then
batches timed from dispatch to the outputs on the host (`.numpy()`), until
`min_batches` and `min_seconds`, within `max_seconds`. The sweep stops at the first
batch size the time budget (`max_total_seconds`) cannot afford or that runs out of
memory, and says why.

Each row carries the peak memory while its batch size ran (`mlbench.training.memory`: the
GPU allocator's peak, or the process's resident high-water mark on a CPU, reset per
row); `mlbench.bench.capacity` finds the largest batch that fits a memory budget.
"""
import dataclasses
import os
import time
from typing import Any, Optional, Sequence

import tensorflow as tf

from mlbench import models
from mlbench.bench import latency
from mlbench.training import memory as peaks
from mlbench.data import synthetic
from mlbench.machine import environment
from mlbench.models import own
from mlbench.models import precision as precision_lib
from mlbench.plan import resolvers
from mlbench.reprs import short
from mlbench.results.records import InferenceResult

DEFAULT_BATCH_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def infer(model: Any, batch_sizes: Sequence[int] = DEFAULT_BATCH_SIZES,
          precision: str = "auto", jit_compile: bool = False, num_warmup_batches: int = 10,
          min_batches: int = 50, min_seconds: float = 1.0, max_seconds: float = 30.0,
          max_total_seconds: Optional[float] = 600.0, num_classes: int = 1000,
          seed: int = 0, verbose: bool = True, clock=time.perf_counter) -> InferenceResult:
    """Times inference of `model` at each batch size; returns an InferenceResult.

    Args:
      model: a zoo name (random weights), a built Keras model (tf_keras or Keras 3) with
        one input of known shape, a model_dir (the trained model `mlbench.load` gives),
        or an exported SavedModel directory (its `serving_default`, as a server calls it).
      batch_sizes: the sweep, each >= 1.
      precision: 'auto' (mixed_bfloat16 on CPUs with bf16 units and GPUs that have it,
        else float32), 'float32', 'mixed_bfloat16' or 'mixed_float16'; a model instance
        keeps the policy it was built under.
      jit_compile: compile the forward pass with XLA.
      num_warmup_batches / min_batches / min_seconds / max_seconds: per batch size.
      max_total_seconds: the whole sweep's budget; larger batches are skipped once it
        is spent (None: no budget).

    Raises:
      ValueError: bad arguments, before anything is built.
    """
    _check(batch_sizes, num_warmup_batches, min_batches, max_seconds)
    forward, source, policy = compiled_forward(model, precision, num_classes, jit_compile)
    name = model_name(model)
    rows, skipped, started, memory = [], {}, clock(), ""
    for batch in batch_sizes:
        if max_total_seconds is not None and clock() - started > max_total_seconds:
            skipped[str(batch)] = f"the sweep's budget of {max_total_seconds:g} s was spent"
            continue
        try:
            memory = peaks.reset_peak()
            row = _one_batch(forward, source, batch, seed, num_warmup_batches, min_batches,
                             min_seconds, max_seconds, clock)
            rows.append(dataclasses.replace(row, peak_memory_mb=peaks.peak_mb()))
        except tf.errors.ResourceExhaustedError as e:
            skipped[str(batch)] = f"out of memory ({str(e).splitlines()[0][:120]})"
            break
        if verbose:
            print(latency.table(rows[-1:], policy).splitlines()[-1], flush=True)
    result = InferenceResult(name, policy, bool(jit_compile), _device(), "synthetic",
                             rows, skipped, environment(), memory)
    if verbose:
        print(latency.table(result.rows, policy))
        print(f"peak memory: {memory}")
        for batch, why in skipped.items():
            print(f"batch {batch} skipped: {why}")
    return result


def _check(batch_sizes, num_warmup_batches, min_batches, max_seconds):
    if not batch_sizes or not all(isinstance(b, int) and not isinstance(b, bool) and b >= 1
                                  for b in batch_sizes):
        raise ValueError(f"`batch_sizes` ({batch_sizes!r}) must be a non-empty list of "
                         "integers >= 1, e.g. 1,8,32.")
    if num_warmup_batches < 0:
        raise ValueError(f"`num_warmup_batches` ({num_warmup_batches}) must be >= 0.")
    if min_batches < 1:
        raise ValueError(f"`min_batches` ({min_batches}) must be >= 1.")
    if not max_seconds > 0:
        raise ValueError(f"`max_seconds` ({max_seconds}) must be > 0.")


def compiled_forward(model, precision, num_classes, jit_compile):
    """(the model's forward pass as one `tf.function`, with XLA when asked; a synthetic
    source of its inputs; the precision policy): what the sweep and LoadGen time."""
    built, source, policy = built_model(model, precision, num_classes)
    forward = tf.function(lambda x: built(x, training=False), jit_compile=bool(jit_compile))
    return forward, source, policy


def built_model(model, precision, num_classes):
    """(the built Keras model, a synthetic source of its inputs, the precision policy) of
    a zoo name, a model instance, a model_dir or an exported SavedModel; ValueError for a
    model synthetic inputs cannot feed."""
    if isinstance(model, str) and os.path.isdir(model):
        return _from_directory(model, precision)
    info = models.resolve(model)
    if info.kind == "vector" or (info.input_shape is None and info.instance is None):
        raise ValueError(f"`model` ({short(model)}) needs one input of known shape to be "
                         "fed synthetic inputs.")
    policy = resolvers.resolve_precision(info, precision)
    with precision_lib.policy_scope(policy):
        built = info.instance if info.instance is not None else \
            models.get(info.name, num_classes=num_classes)
    source = synthetic.for_model(info if info.input_shape else _shaped(info, built),
                                 num_classes=num_classes)
    return built, source, policy


def model_name(model):
    """What a result calls `model`: a zoo name, a directory's path, a model's name."""
    if isinstance(model, str):
        return model
    return models.resolve(model).name


def _from_directory(path, precision):
    """A model_dir (its latest checkpoint, as `mlbench.load` restores it; built in
    `precision` unless 'auto': as trained) or an exported SavedModel (its
    `serving_default` signature, as a server calls it, in the precision it was exported in)."""
    if os.path.exists(os.path.join(path, "saved_model.pb")):
        if precision != "auto":
            raise ValueError(f"`precision` ({precision!r}) cannot change an exported model "
                             f"({path}): it runs as exported; give 'auto', or export "
                             "the run again in that precision.")
        served = _Served(path)
        return served, _source_of_shape(served.input_shape), "as exported"
    if os.path.exists(os.path.join(path, "run.json")):
        from mlbench.trainer.evaluation import load
        built = load(path, precision=None if precision == "auto" else precision).model
        info = models.resolve(built)
        return built, synthetic.for_model(_shaped(info, built), num_classes=1), info.policy
    raise ValueError(f"`model` ({path}) is a directory with neither run.json (a model_dir) "
                     "nor saved_model.pb (an `mlbench export`).")


def _source_of_shape(shape):
    return synthetic.SyntheticSource(name="synthetic", kind="image",
                                     input_shape=tuple(shape), num_classes=1)


class _Served:
    """An exported SavedModel's `serving_default` called as a Keras model is called."""

    def __init__(self, path):
        self.loaded = tf.saved_model.load(path)  # kept: the signature uses its variables
        self.signature = self.loaded.signatures["serving_default"]
        _, inputs = self.signature.structured_input_signature
        if len(inputs) != 1:
            raise ValueError(f"`model` ({path}): its serving_default takes {sorted(inputs)};"
                             " one input is timed here.")
        (self.key, spec), = inputs.items()
        if spec.shape.rank is None or None in spec.shape[1:]:
            raise ValueError(f"`model` ({path}): input {self.key!r} has shape {spec.shape};"
                             " a fixed shape beyond the batch is needed.")
        self.input_shape, self.dtype = tuple(spec.shape[1:]), spec.dtype

    def __call__(self, x, training=False):
        return self.signature(**{self.key: tf.cast(x, self.dtype)})


def _shaped(info, built):
    import dataclasses
    return dataclasses.replace(info, input_shape=own.input_shape_of(built), kind="image")


def _one_batch(forward, source, batch, seed, num_warmup, min_batches, min_seconds,
               max_seconds, clock):
    inputs = source.replica_batch(batch, seed)
    inputs = inputs if isinstance(inputs, dict) else inputs[0]  # images; BERT's dict

    def run_batch():
        tf.nest.map_structure(lambda t: t.numpy(), forward(inputs))  # outputs on the host
    return latency.measure(run_batch, batch, num_warmup, min_batches, min_seconds,
                           max_seconds, clock)


def _device():
    gpus = tf.config.list_logical_devices("GPU")
    return "/gpu:0" if gpus else "/cpu:0"


def served_gap(model, path, samples=4, seed=0):
    """The largest absolute difference between an exported SavedModel's outputs and the
    in-process model's on `samples` random inputs (None when the signature takes or gives
    more than one tensor, or integer inputs): the two run through other kernels and
    graphs, so under mixed precision they differ by round-off."""
    served = _Served(path)
    if not served.dtype.is_floating:
        return None
    inputs = tf.random.stateless_uniform((samples,) + served.input_shape, seed=[seed, 7])
    ours = tf.nest.flatten(model(tf.cast(inputs, served.dtype), training=False))
    theirs = tf.nest.flatten(served(inputs))
    if len(ours) != 1 or len(theirs) != 1:
        return None
    return float(tf.reduce_max(tf.abs(tf.cast(ours[0], tf.float32) -
                                      tf.cast(theirs[0], tf.float32))))
