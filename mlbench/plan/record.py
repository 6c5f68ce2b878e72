"""The RunPlan and its parts: every decision of one run, resolved, as frozen records.

A part groups what one reader needs: `parts.build` reads the model, numerics and
distribution; the Loop's configuration reads the cadence; results read the run
directory and the objective. Nothing here checks or resolves anything (that is
`plan.resolve` / `plan.resolve_benchmark`).
"""
import dataclasses
from typing import Any, Dict, Optional, Tuple

from mlbench.training.cadence import Cadence


@dataclasses.dataclass(frozen=True)
class ModelPlan:
    """name / info: the registry name and entry; options: factory overrides;
    input_shape: per-example input (images are adapted to it); num_classes: the
    classifier width (your own model's output width, else the data's labels)."""
    name: str
    info: Any
    options: Dict[str, Any]
    input_shape: Tuple[int, ...]
    num_classes: int


@dataclasses.dataclass(frozen=True)
class Distribution:
    """The tf.distribute strategy, its replicas, and how one optimizer step's
    `global_batch_size` examples are split: each replica gets `per_replica_batch`
    per step, as `gradient_accumulation_steps` micro-batches."""
    strategy: Any
    replicas: int
    global_batch_size: int
    gradient_accumulation_steps: int
    per_replica_batch: int


@dataclasses.dataclass(frozen=True)
class Numerics:
    """The resolved policy name ('float32', 'mixed_bfloat16', ...) and the XLA choice."""
    precision: str
    jit_compile: bool


@dataclasses.dataclass(frozen=True)
class RunDirectory:
    """Where the run lives and how it starts; `trace_dir` receives a profile."""
    model_dir: Optional[str]
    resume: bool
    init_checkpoint: Optional[str]
    trace_dir: Optional[str]


@dataclasses.dataclass(frozen=True)
class Objective:
    """The update rule as resolved, and a model of your own's loss and metrics
    (None: the defaults for the model's kind).

    keras_optimizer: a Keras optimizer (from compile() or given as an object) as an
      `OptimizerSpec`, else None (mlbench's named optimizers, `optimizer_hparams`).
    weighted_metrics: compile()'s metrics that see sample weights.
    loss_weights: compile()'s per-output weights (a model with several outputs).
    sources: where the loss, metrics, optimizer and learning rate came from
      ('argument', 'compile()', "Keras' default" or 'default').
    """
    optimizer: str
    optimizer_hparams: Any  # OptimizerHparams, or KerasOptimizerHparams for an object
    label_smoothing: float
    loss: Any
    metrics: Any
    keras_optimizer: Any = None
    weighted_metrics: Any = None
    sources: Dict[str, str] = dataclasses.field(default_factory=dict)
    loss_weights: Any = None


@dataclasses.dataclass(frozen=True)
class RunPlan:
    """Every decision of one run. Built by `plan.resolve` / `plan.resolve_benchmark`,
    read by `parts.build` and `runner`.

    Attributes:
      mode: 'train' (optimizer updates) or 'forward' (inference timing, benchmark mode).
      model / source / distribution / numerics / cadence / directory / objective: the parts.
      seed / warmup / verbose: as given.
      arguments: the arguments as requested, the typed record itself (TrainArguments or
        BenchmarkArguments; `recorded()` is what result files keep).
      rebuild: how to rebuild the model and data later: the RunRecord that run.json will
        hold, less the arguments and cadence added when it is written (`plan.rundir`;
        train runs).
    """
    mode: str
    model: ModelPlan
    source: Any
    distribution: Distribution
    numerics: Numerics
    cadence: Cadence
    directory: RunDirectory
    objective: Objective
    seed: int
    warmup: bool
    verbose: bool
    arguments: Any
    rebuild: Optional[Any] = None

    @property
    def has_eval(self):
        return self.source.has_eval and self.mode == "train"

    def summary(self):
        """What a run of this plan would do, in plain lines (`--dry_run`)."""
        split, cadence = self.distribution, self.cadence
        lines = [f"model {self.model.name}; global batch {split.global_batch_size} "
                 f"(gradient_accumulation_steps {split.gradient_accumulation_steps}) on "
                 f"{split.replicas} replica(s); {self.numerics.precision}, XLA "
                 f"{'on' if self.numerics.jit_compile else 'off'}",
                 (f"data: {self.source.num_train_examples} train / "
                  f"{self.source.num_eval_examples} eval examples; "
                  if self.source.num_train_examples else "data: made on the devices; ")
                 + f"at most {cadence.train_steps} steps"]
        if self.has_eval:
            lines[-1] += (f", eval every {cadence.eval_every} (offset {cadence.eval_offset}); "
                          f"target {cadence.target}")
            lines.append(f"optimizer: {self.objective.optimizer_hparams.recorded()}")
        return lines
