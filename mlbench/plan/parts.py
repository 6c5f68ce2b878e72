"""`build(plan) -> Parts`: the one builder behind `train`, `benchmark` and `mlperf`.

Model and optimizer under the strategy's scope and the precision policy, the
task, the compiled `TrainStep`, the checkpoint (restored from `model_dir` when
the plan resumes), and the input pipelines, adapted to the model's input.
"""
import dataclasses
import logging
from typing import Any, Callable, Optional

import tensorflow as tf
import tf_keras as keras

from mlbench import models
from mlbench.models import keras3
from mlbench.training import optimizers
from mlbench.models import precision as precision_lib
from mlbench.distribute import strategies
from mlbench.models import own
from mlbench.training import multi_output
from mlbench.training import task as task_lib
from mlbench.distribute import cluster
from mlbench.training import checkpoints, matching
from mlbench.training.checkpoints import latest_checkpoint
from mlbench.training.step import TrainStep


@dataclasses.dataclass
class Parts:
    """What a run is made of.

    Attributes:
      model / optimizer / task / step: the Keras model (tf_keras or Keras 3), its
        (loss-scaled) optimizer of the same generation,
        one replica's maths, and the compiled step.
      checkpoint: a tf.train.Checkpoint of model and optimizer.
      train_inputs: a distributed iterator, or per-replica values on the devices.
      make_eval: builds the distributed eval dataset; None when the data has no eval set.
      resumed_from: the checkpoint restored from `model_dir`, or None for a fresh start.
      resumed_from_step: the step that checkpoint holds (None for a fresh start).
    """
    model: Any
    optimizer: Any
    task: Any
    step: TrainStep
    checkpoint: Any
    train_inputs: Any
    make_eval: Optional[Callable[[], Any]]
    resumed_from: Optional[str]
    resumed_from_step: Optional[int]


def ran(plan, step, **known_after):
    """What ran, for results, built here only: the plan's precision, objective sources,
    micro-batches and strategy, and XLA as the step ran it (False after a fallback; the
    plan's choice is never written back); `known_after` adds what only the caller knows
    once the run is over (the optimizer as recorded, benchmark mode's counts)."""
    return dict(precision=plan.numerics.precision, jit_compile=step.jit_compile,
                objective_from=dict(plan.objective.sources),
                gradient_accumulation_steps=plan.distribution.gradient_accumulation_steps,
                **strategies.facts(plan.distribution.strategy), **known_after)


def build(plan, log=None):
    """Builds every part of `plan`; restores `model_dir`'s latest checkpoint if resuming."""
    keras.utils.set_random_seed(plan.seed)
    keras3.set_random_seed(plan.seed)
    coordinator = _coordinator(plan)
    model, optimizer = _model_and_optimizer(plan)
    task = _task(plan, model)
    split = plan.distribution
    step = TrainStep(split.strategy, model, optimizer, task, split.global_batch_size,
                     gradient_accumulation_steps=split.gradient_accumulation_steps,
                     jit_compile=plan.numerics.jit_compile, mode=plan.mode, log=log,
                     coordinator=coordinator)
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
    resumed_from = _restore(checkpoint, plan, log or logging.getLogger("mlbench").warning)
    if not resumed_from and plan.directory.init_checkpoint:
        _warm_start(model, plan.directory.init_checkpoint,
                    log or logging.getLogger("mlbench").warning)
    # your model's own optimizer trained by an earlier fit (no model_dir): this run's
    # steps count from 0 above its iterations, which its schedule keeps reading as Keras' do
    step.step_offset = 0 if resumed_from else int(optimizer.iterations.numpy())
    done = step.global_step
    make_eval = (lambda: eval_inputs(plan, coordinator)) if plan.has_eval else None
    return Parts(model, optimizer, task, step, checkpoint,
                 train_inputs(plan, done, coordinator), make_eval, resumed_from,
                 done if resumed_from else None)


def _coordinator(plan):
    """TF's ClusterCoordinator when the plan trains with parameter servers (this process
    is the chief: it schedules steps on the workers; see TrainStep.run)."""
    if not strategies.is_parameter_server(plan.distribution.strategy):
        return None
    return tf.distribute.coordinator.ClusterCoordinator(plan.distribution.strategy)


def _task(plan, model):
    """One replica's maths, under the strategy's scope (a KerasTask's metric variables)."""
    with plan.distribution.strategy.scope():
        objective, info = plan.objective, plan.model.info
        if multi_output.is_multi(info):
            labels, outputs = _label_and_output_specs(plan, model)
            return multi_output.task_for(
                info, objective, own.output_probabilities(model, info.output_names),
                [(_pick(labels, i, n), _pick(outputs, i, n))
                 for i, n in enumerate(info.output_names)], outputs)
        return task_lib.for_model(plan.model.info, plan.model.num_classes,
                                  objective.label_smoothing, objective.loss, objective.metrics,
                                  own.ends_in_probabilities(model),
                                  objective.weighted_metrics, _label_and_output_specs(plan,
                                                                                      model))


def _label_and_output_specs(plan, model):
    """Batched specs of your own data's labels and the model's output (Keras resolves
    'accuracy' from them); None for data without an element spec."""
    spec = getattr(plan.source, "train_element_spec", None)
    if spec is None or not plan.model.info.own:
        return None
    batched = tf.nest.map_structure(
        lambda label: tf.TensorSpec((None,) + tuple(label.shape), label.dtype), spec[1])
    return batched, own.output_spec(model, own.example_batch(plan.model.input_shape, spec[0]))


def _pick(structure, index, name):
    return structure[name] if isinstance(structure, dict) else structure[index]


def _build_model(plan):
    info, options, classes = plan.model.info, plan.model.options, plan.model.num_classes
    if not info.own:
        return models.get(plan.model.name, num_classes=classes, **options)
    model = own.check_model(info.factory(num_classes=classes, **options),
                            f"`model` ({plan.model.name!r}) returned a value that")
    spec = getattr(plan.source, "train_element_spec", None)
    if spec is not None:  # a subclassed model is built on the data's spec, as fit builds it
        own.ensure_built(model, own.example_batch(plan.model.input_shape, spec[0]))
    return model


def _model_and_optimizer(plan):
    precision = plan.numerics.precision
    with plan.distribution.strategy.scope():
        with precision_lib.policy_scope(precision):
            model = _build_model(plan)
        optimizer = _models_own_optimizer(plan, model) or _optimizer(plan.objective, model)
        optimizer = precision_lib.wrap_optimizer(optimizer, precision)
        # slots (and a loss scale) made here, under the strategy's scope, not on the first
        # step inside the compiled function: a resume matches and restores all of them
        if not getattr(optimizer, "built", False):  # a Keras 3 optimizer trained before
            optimizers.build_variables(optimizer, model.trainable_variables)
    _attach(model, optimizer)
    return model, optimizer


def _attach(model, optimizer):
    """`model.optimizer` is the optimizer the run trains with, as after Keras' compile and
    fit: learning-rate callbacks read and set `model.optimizer.learning_rate` (the step
    reads that variable every step, and checkpoints hold it), and after the run the model
    holds its trained optimizer (`iterations`, slots) for `model.save` or another fit."""
    try:
        model.optimizer = optimizer
    except (AttributeError, TypeError):  # a model class that forbids the attribute
        pass


def _models_own_optimizer(plan, model):
    """Your model instance's compile() optimizer itself, when nothing overrides it (no
    `optimizer=` or `learning_rate=`) and it carries no loss scale of its own: trained in
    place as Keras' fit trains it, so a second run continues its moments (into a model_dir
    only while it is untrained: that run's checkpoints count its steps from 0). An
    instance always runs on the default strategy, where its optimizer's variables live."""
    sources = plan.objective.sources
    own_one = getattr(model, "optimizer", None)
    if (plan.model.info.instance is None or own_one is None or
            sources.get("optimizer") != "compile()" or
            sources.get("learning_rate") != "compile()" or
            precision_lib.uses_loss_scale(own_one)):
        return None
    if plan.directory.model_dir and int(own_one.iterations.numpy()):
        return None  # a model_dir's checkpoints count the run's own steps: a fresh copy
    return own_one


def _optimizer(objective, model):
    """A fresh optimizer: the Keras one compile() or the caller gave (same class and
    config), else mlbench's named one of the model's generation."""
    if objective.keras_optimizer is not None:
        return objective.keras_optimizer.build()
    return optimizers.from_hyperparameters(objective.optimizer_hparams,
                                           keras3.generation(model))


RUN_ITEMS = ("model", "optimizer")  # what a run's checkpoint holds (`build`)


def _restore(checkpoint, plan, log):
    """Resumes from the newest intact checkpoint in `model_dir`; its path, or None.

    The chief first repairs the bookkeeping (`checkpoints.recover`: half-written folders,
    a lost state file) and sets aside a newest checkpoint that does not read back whole;
    other workers restore what the state file names. Every variable of the model and the
    optimizer (slots, step, loss scale) is matched, by key and shape, before any value is
    assigned: a checkpoint of another model or configuration is refused
    (`matching.CheckpointMismatch`), never half restored."""
    model_dir = plan.directory.model_dir
    if not plan.directory.resume or not model_dir or not latest_checkpoint(model_dir):
        return None
    # once per worker, before the candidates: reading a sync-on-read variable to write it
    # is a collective under MultiWorkerMirroredStrategy, so every worker writes it once
    expected = matching.expected_state(checkpoint, RUN_ITEMS)

    def restore(path):
        matching.check_state(expected, path, _resume_way_out(model_dir, path), RUN_ITEMS)
        checkpoint.restore(path).assert_existing_objects_matched()
    if not cluster.is_chief():
        latest = latest_checkpoint(model_dir)
        restore(latest)
        return latest
    checkpoints.recover(model_dir, log)
    return checkpoints.restore_newest_intact(model_dir, restore, log)


def _resume_way_out(model_dir, path):
    return (f"A model_dir holds one run: give another `model_dir` for a new run, or, to "
            f"fine-tune from this one, a new `model_dir` with `init_checkpoint={path}` "
            f"(the model's weights only). {model_dir} was left as it was.")


def _warm_start(model, path, log):
    """Model weights only, deliberately partial (the optimizer and the step start fresh):
    Model Garden pretrainer items (encoder, masked_lm) or mlbench's `model`, each weight
    matched by key and shape first (`plan.checks` made sure the checkpoint exists)."""
    items = getattr(model, "checkpoint_items", None) or {"model": model}
    count = matching.restore_items(items, path, "Give a checkpoint of the same model (same "
                                   "layers, widths and options), or no `init_checkpoint`.")
    log(f"warm start from {path}: {count} weight(s) of {', '.join(items)} restored; the "
        "optimizer and the step start fresh")


def adapt_images(input_shape):
    """A map function resizing images and matching channels to `input_shape`.

    Bundled 8×8 or 28×28 grey digits feed 32×32 RGB models this way, as
    tf_cnn_benchmarks resized ImageNet to each model's size.
    """
    height, width, channels = input_shape

    def adapt(images, labels):
        if images.shape[1:3] != (height, width):
            images = tf.image.resize(images, (height, width))
        have = images.shape[-1]
        if have != channels:
            images = (tf.repeat(images, channels, axis=-1) if have == 1
                      else tf.reduce_mean(images, axis=-1, keepdims=True))
        return images, labels
    return adapt


def flatten_images(images, labels):
    """Images as vectors, for a model that takes vectors (`mlp` on the digits)."""
    return tf.reshape(images, (tf.shape(images)[0], -1)), labels


def _adapted(dataset, plan):
    if plan.model.input_shape is None or plan.source.kind != "image":
        return dataset  # several inputs, or inputs the data alone shapes: as given
    wanted = tuple(plan.model.input_shape)
    if tuple(plan.source.input_shape) == wanted:
        return dataset
    if len(wanted) == 1:
        return dataset.map(flatten_images, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.map(adapt_images(wanted), num_parallel_calls=tf.data.AUTOTUNE)


def _train_dataset_fn(plan, done_steps):
    batch_size = plan.distribution.per_replica_batch

    def dataset_fn(ctx):
        if plan.source.on_device:  # parameter servers: the synthetic batch, made per worker
            batch = plan.source.replica_batch(batch_size, plan.seed)
            return tf.data.Dataset.from_tensors(batch).repeat()
        return _adapted(plan.source.train_dataset(ctx, batch_size, plan.seed,
                                                  skip_batches=done_steps), plan)
    return dataset_fn


def host_pipeline(plan):
    """The train input pipeline of one input worker, as a plain dataset of per-replica
    batches (what the diagnosis times alone); None for data made on the devices."""
    if plan.source.on_device:
        return None
    return _train_dataset_fn(plan, 0)(tf.distribute.InputContext())


def train_inputs(plan, done_steps=0, coordinator=None):
    """Synthetic data: per-replica values on the devices; otherwise a distributed iterator
    (with parameter servers: a per-worker iterator, each worker reading its own shard).

    On resume the pipeline skips the batches already consumed, so N + N steps
    see the same data as 2N straight steps.
    """
    dataset_fn = _train_dataset_fn(plan, done_steps)
    strategy = plan.distribution.strategy
    if coordinator is not None:
        return iter(coordinator.create_per_worker_dataset(
            lambda: strategy.distribute_datasets_from_function(dataset_fn)))
    if plan.source.on_device:
        return plan.source.distribute(strategy, plan.distribution.per_replica_batch, plan.seed)
    return iter(strategy.distribute_datasets_from_function(dataset_fn))


def eval_inputs(plan, coordinator=None):
    """The eval set; with parameter servers a plain dataset the chief evaluates itself."""
    batch_size = plan.distribution.per_replica_batch
    if coordinator is not None:
        return _adapted(plan.source.eval_dataset(None, batch_size), plan)
    return plan.distribution.strategy.distribute_datasets_from_function(
        lambda ctx: _adapted(plan.source.eval_dataset(ctx, batch_size), plan))
