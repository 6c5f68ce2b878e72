"""`TrainArguments` and `BenchmarkArguments`: the typed records of `train`'s and
`benchmark`'s arguments and their defaults, the one form in which arguments reach
`plan` (`resolve`, `resolve_benchmark`).

`mlbench.train` keeps its explicit signature (what `help()` and IDEs show) and a test
holds it equal to this record; `mlbench mlperf` and the plan read the defaults from
here, so no entry point imports another for them. Documentation of each argument
lives in `mlbench.train`'s docstring for Python users and in `cli/help_text.py` for the
shell (the CLI's flags come from the signature, their help from there).
"""
import dataclasses
from typing import Any, Dict, Optional, Sequence, Union

from mlbench.reprs import recordable


@dataclasses.dataclass(frozen=True)
class TrainArguments:
    model: Any = None
    data: Any = None
    eval_data: Any = None
    global_batch_size: Optional[int] = None
    precision: str = "auto"
    jit_compile: Union[bool, str] = "auto"
    gradient_accumulation_steps: int = 1
    strategy: Any = "auto"
    num_devices: Optional[int] = None
    all_reduce: str = "auto"
    cluster: str = "tf_config"
    train_steps: Optional[int] = None
    train_epochs: Optional[float] = None
    steps_per_epoch: Optional[int] = None
    eval_every: Optional[int] = None
    eval_every_epochs: Optional[float] = None
    steps_per_loop: int = 100
    target: Optional[Dict[str, float]] = None
    model_dir: Optional[str] = None
    resume: bool = True
    seed: int = 0
    optimizer: Any = None
    learning_rate: Optional[float] = None
    optimizer_options: Optional[Dict[str, Any]] = None
    model_options: Optional[Dict[str, Any]] = None
    data_dir: Optional[str] = None
    data_options: Optional[Dict[str, Any]] = None
    label_smoothing: float = 0.0
    loss: Any = None
    metrics: Optional[Sequence[Any]] = None
    checkpoint_every: int = 0
    keep_best: Optional[Dict[str, str]] = None
    eval_offset_epochs: float = 0
    warmup: bool = False
    init_checkpoint: Optional[str] = None
    callbacks: Optional[Sequence[Any]] = None
    verbose: bool = True
    trace_dir: Optional[str] = None

    def as_dict(self):
        """{field: value}, the values themselves (no deep copies of models or callbacks)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def recorded(self):
        """The arguments as a result file records them (JSON values; a model, data or
        loss object by a bounded description; callbacks by their class names)."""
        return dict({k: recordable(v) for k, v in self.as_dict().items() if k != "callbacks"},
                    callbacks=[type(c).__name__ for c in self.callbacks or ()])


@dataclasses.dataclass(frozen=True)
class BenchmarkArguments:
    """`mlbench.benchmark`'s arguments (its clock and print interval aside); a test holds
    `benchmark`'s signature equal to this record."""
    model: Any = None
    batch_size: Optional[int] = None
    num_devices: int = 1
    variable_update: Optional[str] = None
    local_parameter_device: Optional[str] = None
    all_reduce: str = "auto"
    data: Any = "synthetic"
    data_dir: Optional[str] = None
    precision: str = "auto"
    jit_compile: Union[bool, str] = "auto"
    optimizer: str = "sgd"
    num_warmup_batches: int = 10
    num_batches: int = 100
    num_runs: int = 5
    forward_only: bool = False
    num_classes: int = 1000
    seed: int = 0
    trace_dir: Optional[str] = None
    diagnose: bool = False
    verbose: bool = True

    as_dict = TrainArguments.as_dict

    def recorded(self):
        """The arguments as a result file records them (JSON values)."""
        return {k: recordable(v) for k, v in self.as_dict().items()}


def train_defaults():
    """{argument: default} of `mlbench.train` (gin's files and bindings aside)."""
    return {f.name: f.default for f in dataclasses.fields(TrainArguments)}
