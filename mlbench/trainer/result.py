"""What `train()` returns."""
import dataclasses
from typing import Any, Dict, List, Optional

from mlbench import result_files
from mlbench.models import keras3


@dataclasses.dataclass
class TrainResult:
    """The outcome of `mlbench.train`.

    Attributes:
      model: the trained Keras model (tf_keras or Keras 3, as given).
      final_metrics: metrics of the last eval.
      reached_target: whether an eval met every `target` metric.
      time_to_quality_s: run start → the first eval at target (None if not reached, or if
        the run resumed from a checkpoint: then `time_to_quality_note` says so).
      time_to_quality_note: why `time_to_quality_s` is None although the target was reached.
      resumed_from_step: the step of the checkpoint the run resumed from (None: fresh start).
      steps: optimizer steps done (including resumed ones).
      examples_per_second: training throughput, compile and warm-up excluded.
      history: one dict per loop (step, loss, lr, wall_time_s, metrics at evals).
      config: the resolved arguments of the run.
      ran: what actually ran (precision, jit_compile, strategy, replicas, micro-batches).
      model_dir: where checkpoints, summaries and configs went.
      compile_s: time of the first (tracing/compiling) step.
      skipped_steps: steps skipped by fp16 dynamic loss scaling.
      run_seconds: wall time of the training loop.
      optimizer: the optimizer (with its loss-scale wrapper under float16).
      status: 'finished'; 'stopped' (a callback set `model.stop_training` before the end
        and the target, if any, was not reached: checkpointed, and a re-run with the same
        length reports this result); or 'interrupted' (SIGINT/SIGTERM: checkpointed,
        resumable).
      planned_steps: the run's length in steps as asked (`steps` may be fewer).
      restored_from: the checkpoint `mlbench.load` restored the model from.
      environment: the machine and stack the run trained on (as benchmark results record:
        machine, CPU, cores, accelerator, TensorFlow and CUDA build, mlbench's git hash).
      diagnosis: findings on the run (`mlbench.diagnosis`): whether the input pipeline
        or the step set the pace, the step's traces, skipped steps and loss scale; each a
        dict with topic, status, verdict, detail, figures and advice.
      loaded_from: the model_dir whose stored result this is, when the run had already
        finished there (nothing was trained or rewritten); None for a run that trained.
      input_spec: your own data's features and labels (shapes, dtypes, structure, as
        `mlbench.data.specs.encode` writes them); `export` serves the features' dtypes.
    """
    model: Any
    final_metrics: Dict[str, float]
    reached_target: bool
    time_to_quality_s: Optional[float]
    steps: int
    examples_per_second: Optional[float]
    history: List[dict]
    config: Dict[str, Any]
    ran: Dict[str, Any]
    model_dir: Optional[str]
    compile_s: float = 0.0
    skipped_steps: int = 0
    run_seconds: float = 0.0
    optimizer: Any = None
    time_to_quality_note: Optional[str] = None
    resumed_from_step: Optional[int] = None
    status: str = "finished"
    loaded_from: Optional[str] = None
    planned_steps: Optional[int] = None
    restored_from: Optional[str] = None
    environment: Dict[str, Any] = dataclasses.field(default_factory=dict)
    diagnosis: List[Dict[str, Any]] = dataclasses.field(default_factory=list)
    input_spec: Optional[Dict[str, Any]] = None

    def __repr__(self):
        return f"TrainResult({self.summary()!r})"

    def summary(self):
        """A JSON-able dict of everything but the model."""
        d = dataclasses.asdict(dataclasses.replace(self, model=None, optimizer=None))
        for key in ("model", "optimizer"):
            d.pop(key)
        return d

    @property
    def keras_history(self):
        """`history` in Keras' `History.history` shape, one entry per epoch (an epoch is
        one eval period): {'loss': [...], 'learning_rate': [...], 'val_loss': [...],
        'val_<metric>': [...], and the metrics under mlbench's names}, the logs Keras
        callbacks received at each epoch's end."""
        from mlbench.training.callbacks import keras_history
        return keras_history(self.history)

    def export(self, path):
        """Writes the model as a SavedModel that `tf.saved_model.load(path)` serves
        (signature 'serving_default'). A tf_keras model's also rebuilds with
        `tf_keras.models.load_model(path)`; a Keras 3 model's is Keras 3's own export
        (`Model.export`: inference only; keep `model.save("x.keras")` to rebuild it)."""
        import os
        from mlbench.data import specs  # TensorFlow: only when a model is exported
        from mlbench.training.checkpoints import disk_full_named
        features = None if self.input_spec is None else \
            specs.batched(specs.decode(self.input_spec["features"]))
        with disk_full_named(os.path.dirname(os.path.abspath(path)), f"exporting to {path}",
                             advice="nothing else was touched: free space and export "
                                    "again (`mlbench export`)"):
            if keras3.is_model(self.model):
                signature = {} if features is None else {"input_signature": [features]}
                self.model.export(path, format="tf_saved_model", verbose=False, **signature)
            else:
                self.model.save(path, save_format="tf", include_optimizer=False,
                                signatures=self._tf_keras_signature(features))
        return path

    def _tf_keras_signature(self, features):
        """serving_default taking the data's own dtypes (int32 token ids stay int32), or
        None for tf_keras' own (from the model's inputs)."""
        import tensorflow as tf
        if features is None:
            return None
        flat = tf.nest.flatten(features)

        @tf.function(input_signature=flat)
        def serve(*tensors):
            return self.model(tf.nest.pack_sequence_as(features, list(tensors)),
                              training=False)
        return {"serving_default": serve.get_concrete_function()}

    @classmethod
    def from_summary(cls, summary, model=None, optimizer=None, **changes):
        """A TrainResult from a stored `summary()` (result.json), with `changes`."""
        names = {f.name for f in dataclasses.fields(cls)} - {"model", "optimizer"}
        values = {k: v for k, v in summary.items() if k in names}
        return cls(model=model, optimizer=optimizer, **{**values, **changes})

    def to_json(self, model_dir):
        """Writes `summary()` as the run's result.json in `model_dir`, atomically (a kill
        mid-write keeps the old file); returns its path."""
        return result_files.write("train", model_dir, self.summary())
