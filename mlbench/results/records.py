"""The result records: one frozen dataclass per kind of result file, nested records
inside, written and read only by `mlbench.results.files` (which checks them on read).

| record          | file                     | nested records                        |
|-----------------|--------------------------|---------------------------------------|
| TrainResult     | <model_dir>/result.json  | Finding                               |
| BenchmarkResult | <dir>/result.json        | RunStats, Stats, Finding,             |
|                 |                          | Projection (ProjectedCell,            |
|                 |                          | TimeToTrain, Convergence)             |
| SuiteResults    | <dir>/results.json       | BenchmarkResult                       |
| MLPerfResults   | <dir>/results.json       | MLPerfSettings, MLPerfRun, Score      |
| RunRecord       | <model_dir>/run.json     | ModelReference, InputSpec, Cadence    |

`TrainResult` and `BenchmarkResult` are also what `mlbench.train` and `mlbench.benchmark`
return. A benchmark result's `Projection` and its parts are in `results.projection`.
"""
import dataclasses
from typing import Any, Dict, List, Optional

from mlbench.results import codec
from mlbench.results.inference import InferenceResult, LatencyStats  # noqa: F401
from mlbench.results.projection import Projection
from mlbench.training.cadence import Cadence

STATUSES = ("ok", "warning", "problem")


@dataclasses.dataclass(frozen=True)
class Finding:
    """What one measurement says about a run.

    Attributes:
      topic: 'input', 'compile', 'numerics', 'learning' or 'scaling'.
      status: 'ok' (nothing to change), 'warning' (worth a look) or 'problem' (it cost
        the run throughput or quality).
      verdict: a few words ('input-bound', 'compute-bound', 'retraced after warm-up', ...).
      detail: one sentence with the measured figures.
      figures: those figures by name (what the sentence says, for programs).
      advice: what would change the verdict ('' when nothing needs to).
    """
    topic: str
    status: str
    verdict: str
    detail: str
    figures: Dict[str, Any] = dataclasses.field(default_factory=dict)
    advice: str = ""

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"`status` ({self.status!r}) must be one of {STATUSES}.")

    def to_dict(self):
        return dataclasses.asdict(self)

    def line(self):
        advice = f" {self.advice}" if self.advice else ""
        return f"DIAGNOSIS {self.topic}: {self.verdict} ({self.status}). {self.detail}{advice}"


@dataclasses.dataclass(frozen=True)
class RunStats:
    """One timed run, as tf_cnn_benchmarks reports it (`bench.stats.run_stats`)."""
    images_per_sec_mean: float
    images_per_sec_stderr: float
    jitter: float
    total_images_per_sec: float
    num_steps: int
    step_times: List[float]

    def line(self, unit="images"):
        """tf_cnn_benchmarks' line, in the model's unit (images, sequences, examples)."""
        return (f"{unit}/sec: {self.images_per_sec_mean:.1f} +/- "
                f"{self.images_per_sec_stderr:.1f} (jitter = {self.jitter:.1f})")


@dataclasses.dataclass(frozen=True)
class Stats:
    """Across runs: mean, standard deviation, min and max of the per-run total
    images/sec, and the number of runs (`bench.stats.across_runs`)."""
    mean: float
    std: float
    min: float
    max: float
    runs: int


@dataclasses.dataclass(frozen=True)
class BenchmarkResult:
    """One configuration's throughput, tf_cnn_benchmarks style.

    Attributes:
      model / batch_size (per device) / num_devices / data / variable_update: the configuration.
      runs: per-run statistics (mean ± stderr, jitter, total images/sec, step times).
      images_per_sec: across runs (`Stats`: mean, std, min, max, runs) of total images/sec.
      compile_s: the first warm-up step (trace + compile), reported apart.
      ran: what actually ran (precision, jit_compile, strategy, replicas, forward_only).
      flops_per_example / mfu / peak_flops / peak_source: model-FLOPs utilisation.
      environment: the report's environment block.
      breakdown: with `trace_dir`, where the traced step's time went
        (`mlbench.training.profile.Breakdown`).
      diagnosis: findings (`mlbench.diagnosis`): input-bound or compute-bound, the
        step's traces and, with `diagnose` on N > 1 devices, scaling against one device.
      projection: with `--project=N` (`projector.attach`), the scaling projector's cells
        for 2 ... N of this device over a platform record's interconnect: a projection,
        never a measurement (its `label` says so).
    """
    model: str
    batch_size: int
    num_devices: int
    data: str
    variable_update: str
    runs: List[RunStats]
    images_per_sec: Stats
    compile_s: float
    ran: Dict[str, Any]
    flops_per_example: Optional[float] = None
    mfu: Optional[float] = None
    peak_flops: Optional[float] = None
    peak_source: str = ""
    environment: Dict[str, Any] = dataclasses.field(default_factory=dict)
    breakdown: Optional[Any] = None
    projection: Optional[Projection] = None
    diagnosis: List[Finding] = dataclasses.field(default_factory=list)
    unit: str = "images"  # what one example is: images, sequences (BERT) or examples
    # the peak over the timed runs (MiB) and what it measures (`training.memory`)
    peak_memory_mb: Optional[float] = None
    memory: str = ""

    def to_dict(self):
        return codec.encode(self)

    def total_line(self):
        return f"total {self.unit}/sec: {self.images_per_sec.mean:.2f}"


@dataclasses.dataclass(frozen=True)
class SuiteResults:
    """A benchmark suite's results.json: its configurations' results and settings.

    Attributes:
      reference: the page's published figures for this suite ({data: {devices: {model:
        images/sec}}}), when the suite reproduces one of its tables.
      skipped: configurations not run, each with why.
    """
    title: str
    settings: Dict[str, Any]
    results: List[BenchmarkResult]
    reference: Optional[Dict[str, Any]] = None
    skipped: List[Any] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class Score:
    """MLCommons' olympic score of a run set (None when it has none; `label` says why)."""
    minutes: Optional[float]
    runs: int
    required: int
    valid: bool
    label: str


@dataclasses.dataclass(frozen=True)
class MLPerfRun:
    """One MLPerf run: its seed, time to target and the compliance checker's verdict."""
    seed: int
    reached_target: bool
    minutes: Optional[float]
    status: str
    metrics: Dict[str, float]
    log: str
    checker_passed: bool
    checker_output: str


@dataclasses.dataclass(frozen=True)
class MLPerfSettings:
    """The `mlperf.*` settings of a run set (`mlperf.settings`, bound in gin)."""
    benchmark: str
    division: str = "closed"
    org: str = "mlbench"
    platform: str = "unknown"
    status: str = "research"
    fallback_to_open: bool = False
    ruleset: Optional[str] = None
    prepare_data: Optional[Dict[str, Any]] = None


@dataclasses.dataclass(frozen=True)
class MLPerfResults:
    """An MLPerf run set's results.json.

    Attributes:
      settings: the `mlperf.*` settings the runs used (benchmark, ruleset, ...).
      rcp: with a custom RCP file, the convergence verdict (`mlperf.rcp`), with its text.
    """
    settings: MLPerfSettings
    division: str
    runs: List[MLPerfRun]
    score: Score
    precision: Optional[str] = None
    environment: Dict[str, Any] = dataclasses.field(default_factory=dict)
    rcp: Optional[Dict[str, Any]] = None


@dataclasses.dataclass(frozen=True)
class InputSpec:
    """Your own data's features and labels as `mlbench.data.specs.encode` writes them
    (shapes, dtypes, structure): rebuilds, loads and exports a model without the data."""
    features: Any
    labels: Any


@dataclasses.dataclass(frozen=True)
class ModelReference:
    """How to build a run's model again.

    Attributes:
      kind: 'zoo' or 'registered' (by `name`), 'import' (`import_path`, `module:function`)
        or 'unnamed' (an object: `description` says which; `model=` must be given again).
      keras: the model's generation ('tf_keras' or 'keras3').
    """
    kind: str
    num_classes: Optional[int] = None
    options: Dict[str, Any] = dataclasses.field(default_factory=dict)
    keras: Optional[str] = None
    name: Optional[str] = None
    import_path: Optional[str] = dataclasses.field(default=None, metadata={"key": "import"})
    description: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class RunIdentity:
    """What makes a run this run: a resume into its model_dir must not change any of it
    (`plan.same_run`). Values as resolved (the precision `auto` picked, the optimizer's
    rate and settings); None where the value was an object with no name (your model
    instance, arrays), which the checkpoint's variables then vouch for alone."""
    model: Optional[str]
    model_options: Dict[str, Any]
    num_classes: Optional[int]
    data: Optional[str]
    data_options: Dict[str, Any]
    global_batch_size: int
    gradient_accumulation_steps: int
    precision: str
    optimizer: Dict[str, Any]
    loss: Any
    metrics: Any
    label_smoothing: float
    strategy: str
    replicas: int
    seed: int


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """A run directory's run.json, written when the run starts (`plan.rundir`).

    Attributes:
      unnamed: the arguments that were objects (arrays, a dataset, a loss object) and
        cannot be rebuilt from the record; loading asks for them by name.
      arguments: the run's arguments as recorded (`TrainArguments.recorded()`).
      cadence: the run's length, evals and checkpoints (the sidecar's schedule).
      identity: what a resume may not change (None in files of schema 1).
      schema: the file's schema (`plan.rundir.SCHEMA`); 1 for files written without one.
    """
    model: ModelReference
    precision: str
    unnamed: List[str]
    input_spec: Optional[InputSpec] = None
    arguments: Dict[str, Any] = dataclasses.field(default_factory=dict)
    cadence: Optional[Cadence] = None
    identity: Optional[RunIdentity] = None
    schema: int = 1


@dataclasses.dataclass(frozen=True)
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
      history: one dict per block of steps (step, loss, learning_rate, wall_time_s,
        examples_per_second, metrics at evals).
      arguments: the run's arguments as recorded (`TrainArguments.recorded()`; the file
        keeps them under its older key, 'config').
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
      budgets: every length in steps this run was asked for, in order, when a resume
        changed it (`[200, 300]`: started for 200 steps, resumed for 300); else empty.
      restored_from: the checkpoint `mlbench.load` restored the model from.
      environment: the machine and stack the run trained on (as benchmark results record:
        machine, CPU, cores, accelerator, TensorFlow and CUDA build, mlbench's git hash).
      diagnosis: findings on the run (`mlbench.diagnosis`): whether the input pipeline
        or the step set the pace, the step's traces, skipped steps and loss scale (`Finding`
        records).
      loaded_from: the model_dir whose stored result this is, when the run had already
        finished there (nothing was trained or rewritten); None for a run that trained.
      input_spec: your own data's features and labels (shapes, dtypes, structure, as
        `mlbench.data.specs.encode` writes them); `export` serves the features' dtypes.
    """
    model: Any = dataclasses.field(metadata=codec.NOT_IN_FILE)
    final_metrics: Dict[str, float]
    reached_target: bool
    time_to_quality_s: Optional[float]
    steps: int
    examples_per_second: Optional[float]
    history: List[dict]
    arguments: Dict[str, Any]
    ran: Dict[str, Any]
    model_dir: Optional[str]
    compile_s: float = 0.0
    skipped_steps: int = 0
    run_seconds: float = 0.0
    optimizer: Any = dataclasses.field(default=None, metadata=codec.NOT_IN_FILE)
    time_to_quality_note: Optional[str] = None
    resumed_from_step: Optional[int] = None
    status: str = "finished"
    loaded_from: Optional[str] = None
    planned_steps: Optional[int] = None
    budgets: List[int] = dataclasses.field(default_factory=list)
    restored_from: Optional[str] = None
    environment: Dict[str, Any] = dataclasses.field(default_factory=dict)
    diagnosis: List[Finding] = dataclasses.field(default_factory=list)
    input_spec: Optional[InputSpec] = None
    # the peak over the training loop (MiB) and what it measures (`training.memory`)
    peak_memory_mb: Optional[float] = None
    memory: str = ""

    def __repr__(self):
        return f"TrainResult({self.summary()!r})"

    def summary(self):
        """A JSON-able dict of everything but the model and the optimizer."""
        return codec.encode(self)

    @property
    def keras_history(self):
        """`history` in Keras' `History.history` shape, one entry per epoch (an epoch is
        one eval period): {'loss': [...], 'val_loss': [...], 'val_<metric>': [...], and
        the metrics under mlbench's names}, the logs Keras callbacks received at each
        epoch's end (the rate of every block is in `history`)."""
        from mlbench.training.callbacks import keras_history
        return keras_history(self.history)

    def export(self, path):
        """Writes the model as a SavedModel that `tf.saved_model.load(path)` serves
        (signature 'serving_default'). A tf_keras model's also rebuilds with
        `tf_keras.models.load_model(path)`; a Keras 3 model's is Keras 3's own export
        (`Model.export`: inference only; keep `model.save("x.keras")` to rebuild it)."""
        import os
        from mlbench.models import keras3
        from mlbench.data import specs  # TensorFlow: only when a model is exported
        from mlbench.training.checkpoints import disk_full_named
        features = None if self.input_spec is None else \
            specs.batched(specs.decode(self.input_spec.features))
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

    def with_model(self, model=None, optimizer=None, **changes):
        """This stored result (read from result.json) given its model, with `changes`."""
        return dataclasses.replace(self, model=model, optimizer=optimizer, **changes)
