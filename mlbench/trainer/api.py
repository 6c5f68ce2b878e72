"""`train(...)`: arguments + gin → RunPlan → Parts → Loop → TrainResult.

Gin configures one root, `train` (any argument below, e.g. `train.model = ...`),
and the model factory it calls (`mlbench.models.get`).
"""
import functools
import inspect
from typing import Any, Dict, Optional, Sequence, Union

from mlbench import config as gin_config
from mlbench import plan as plan_lib
from mlbench.plan.arguments import train_defaults
from mlbench.distribute import cluster
from mlbench.results.records import TrainResult
from mlbench.trainer.runner import run


def _keyword_entry_point(run):
    """Turns a documented signature stub into an entry point calling `run(explicit)`.

    gin may bind any argument, and only the keywords a caller actually writes
    override it; Python's defaults cannot tell "not given" from "given the
    default", so the entry point passes `run` exactly the keywords given. The
    stub keeps the explicit, typed signature that `help()` and IDEs show.
    """
    def decorate(stub):
        signature = inspect.signature(stub)

        @functools.wraps(stub)
        def entry(*args, **kwargs):
            return run(dict(signature.bind(*args, **kwargs).arguments))
        return entry
    return decorate


def _run_train(explicit):
    gin_files = explicit.pop("gin_files", ())
    gin_bindings = explicit.pop("gin_bindings", ())
    # an MLPerf file run as a plain training: its `mlperf.*` section is not train's to check
    with gin_config.scope(gin_files, gin_bindings, reads=("train",)):
        arguments = _arguments_of_this_task(explicit)
        return run(plan_lib.resolve(arguments), arguments.callbacks)


def plan_train(gin_files=(), gin_bindings=(), **explicit):
    """The RunPlan `train` would run with these arguments (`mlbench train --dry_run`):
    every check of bad input, the data read for its size, the strategy made; no model
    built, nothing written, no step run."""
    with gin_config.scope(gin_files, gin_bindings, reads=("train",)):
        return plan_lib.resolve(_arguments_of_this_task(dict(explicit)))


def _arguments_of_this_task(explicit):
    """The run's arguments (defaults, gin, then `explicit`), with the cluster configured;
    a ps or worker task of a parameter-server cluster serves here instead (until the
    launcher or the scheduler stops it): only the coordinator plans and runs."""
    arguments = plan_lib.train_arguments(explicit, train_defaults())
    cluster.configure(arguments.cluster)
    if cluster.server_role():
        cluster.serve()
    return arguments


@_keyword_entry_point(_run_train)
def train(*, gin_files: Sequence[str] = (), gin_bindings: Sequence[str] = (),
          model: Any = None, data: Any = None, eval_data: Any = None,
          global_batch_size: Optional[int] = None, precision: str = "auto",
          jit_compile: Union[bool, str] = "auto", gradient_accumulation_steps: int = 1,
          strategy: Any = "auto", num_devices: Optional[int] = None, all_reduce: str = "auto",
          cluster: str = "tf_config",
          train_steps: Optional[int] = None, train_epochs: Optional[float] = None,
          steps_per_epoch: Optional[int] = None,
          eval_every: Optional[int] = None, eval_every_epochs: Optional[float] = None,
          steps_per_loop: int = 100, target: Optional[Dict[str, float]] = None,
          model_dir: Optional[str] = None, resume: bool = True, seed: int = 0,
          optimizer: Any = None, learning_rate: Optional[float] = None,
          optimizer_options: Optional[Dict[str, Any]] = None,
          model_options: Optional[Dict[str, Any]] = None, data_dir: Optional[str] = None,
          data_options: Optional[Dict[str, Any]] = None, label_smoothing: float = 0.0,
          loss: Any = None, metrics: Optional[Sequence[Any]] = None,
          checkpoint_every: int = 0, keep_best: Optional[Dict[str, str]] = None,
          eval_offset_epochs: float = 0, warmup: bool = False,
          init_checkpoint: Optional[str] = None, callbacks: Optional[Sequence[Any]] = None,
          verbose: bool = True, trace_dir: Optional[str] = None) -> TrainResult:
    """Trains `model` on `data` with the mlbench loop and returns a TrainResult.

    Every argument may also come from gin (`train.<argument> = ...`); the ones
    written in the call win. mlbench parses gin in its own scope: a notebook
    user's own gin configuration is left as it was.

    Args:
      gin_files: gin files (searched as given, then among the gin files shipped with mlbench).
      gin_bindings: extra bindings such as "train.train_steps = 100".
      model: a name from `mlbench.models.list_models()`, your own zero-argument function
        returning a Keras model, tf_keras or Keras 3 (`import keras`, TensorFlow backend),
        built under the strategy's scope and the precision policy, or a built model (one
        device, the policy it was built under).
      data: a name from `mlbench.data.names()`, a DataSource, or your own data: `(x, y)`
        or `(x, y, sample_weight)` arrays, an unbatched tf.data.Dataset of `(features,
        labels[, sample_weights])` (a batched one with data_options={'batched': True}), or
        `{"train": ..., "eval": ...}` of either. Images of another shape are adapted to a
        built-in model's input (resized, channels repeated or averaged).
      eval_data: the eval set of your own data (arrays or a dataset), if not in `data`.
      global_batch_size: examples per optimizer step, over all replicas and micro-batches.
      precision: 'float32' | 'mixed_float16' | 'mixed_bfloat16' | 'auto'.
      jit_compile: True | False | 'auto' (XLA on GPU/TPU, off on CPU).
      gradient_accumulation_steps: micro-batches per replica per step (one update per step).
      strategy: a name from `mlbench.distribute.STRATEGIES` or a tf.distribute.Strategy;
        'auto' honours TF_CONFIG (several workers → MultiWorkerMirroredStrategy).
      num_devices: devices for 'auto'/'mirrored'/'central_storage'; on a CPU-only machine
        the CPU is split into this many logical devices if TensorFlow has not started yet.
      all_reduce: 'auto' | 'nccl' | 'hierarchical_copy' | 'reduction_to_one_device'.
      cluster: where the cluster comes from: 'tf_config' (TF_CONFIG, as `mlbench launch`
        and Kubeflow TFJobs set it), 'slurm' (an `srun` step, through TensorFlow's
        SlurmClusterResolver) or 'jobset' (a pod of a JobSet or Trainer v2 TrainJob, from
        its own identity: `mlbench.distribute.pod_identity`). With ps tasks, ps and worker processes serve and the chief
        trains with parameter servers.
      train_steps / train_epochs: length of the run (give exactly one).
      steps_per_epoch: optimizer steps in one epoch (default: train examples / global
        batch, rounded): what `train_epochs` and `eval_every_epochs` count, and where
        Keras callbacks' epochs end in a run counted in epochs.
      eval_every / eval_every_epochs: eval cadence in steps or epochs (default: at the end).
        Data without an eval set (synthetic) is never evaluated.
      steps_per_loop: steps per host round trip (the loss is checked for NaN/Inf once per loop).
      target: {metric: value}, e.g. {"top1": 0.97}; stop at the first eval that meets it.
      model_dir: checkpoints, summaries (train/, validation/), configs, result.json;
        parents are created.
      resume: continue from the latest checkpoint in `model_dir` (said in a line and in
        `TrainResult.resumed_from_step`); False refuses a `model_dir` holding checkpoints.
      seed: seeds weights and data order.
      optimizer / learning_rate / optimizer_options: a name and its options (see
        `mlbench.training.optimizers.hyperparameters`), or a Keras optimizer object (either
        generation, the model's). Default: a compiled model's own optimizer, else 'sgd'; the
        learning rate 0.1 for the zoo (its recipes), Keras' default for a model of your
        own (SGD 0.01, Adam 0.001). `result.ran['objective_from']` says where each came from.
      model_options / data_dir / data_options: passed to the model factory / data source
        (your own data takes 'batched', 'shuffle' and 'class_weight', as `fit` does).
      label_smoothing: for classification losses.
      loss: your own model's loss: a Keras loss name ('mse', 'binary_crossentropy'), a
        Loss object (tf_keras or Keras 3), or a function (labels, outputs) -> per-example losses
        (default: the model's compile() loss; else sparse cross-entropy on integer labels,
        from probabilities when the model ends in a softmax). Several outputs: a list or a
        dict by output name, as compile() takes them.
      metrics: Keras metric names or objects, tf_keras or Keras 3 ('accuracy', 'top5', 'auc',
        'mean_absolute_error'), reported under their names beside 'eval_loss', resolved
        as Keras' compile resolves them (default: the model's compile() metrics; else
        ['accuracy'] for your own classifier; built-in models: 'top1').
      checkpoint_every: steps between checkpoints (default: at each eval and the end).
      keep_best: {metric: 'max' | 'min'}, e.g. {'top1': 'max'}: the checkpoint of the best
        eval by that metric is kept (in checkpoints/best) beside the last few, and
        `mlbench.load(model_dir, checkpoint='best')` restores it.
      eval_offset_epochs: with `eval_every_epochs`, evals at offset + k·every epochs (MLPerf).
      warmup: compile and warm up on zeros before the run clock starts, then restore the
        initial state (compile time stays out of `time_to_quality_s`).
      init_checkpoint: weights to start from when `model_dir` has no checkpoint yet (a
        Model Garden BERT pretrainer checkpoint, or an mlbench one).
      callbacks: Keras callbacks (Keras 3 or tf_keras: EarlyStopping, ModelCheckpoint,
        CSVLogger, LambdaCallback...) and `mlbench.Callback`s. Keras ones get `fit`'s
        events, an epoch being a pass over the data in a run counted in epochs (else one
        eval period); their logs: loss, learning_rate, the training metrics of a model of
        your own, val_loss, val_<metric>. A callback monitoring a log the run never
        writes is refused. `model.stop_training = True` stops the run after the current
        block (checkpointed; status 'stopped').
      verbose: print progress lines; False prints nothing.
      trace_dir: a TensorBoard profile of one block goes here; its breakdown is printed.
        It is the time per op category (`mlbench.training.profile.summarize`), shown
        when `verbose`.

    Returns:
      TrainResult.

    Raises:
      ValueError: bad input, naming the argument and value, before anything is written.
      DivergenceError: the loss became NaN/Inf.
    """
