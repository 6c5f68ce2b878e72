"""What `benchmark()` returns."""
import dataclasses
from typing import Any, Dict, List, Optional

from mlbench.bench.stats import RunStats


@dataclasses.dataclass
class BenchmarkResult:
    """One configuration's throughput, tf_cnn_benchmarks style.

    Attributes:
      model / batch_size (per device) / num_devices / data / variable_update: the configuration.
      runs: per-run statistics (mean ± stderr, jitter, total images/sec, step times).
      images_per_sec: across runs {mean, std, min, max, runs} of total images/sec.
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
    images_per_sec: Dict[str, float]
    compile_s: float
    ran: Dict[str, Any]
    flops_per_example: Optional[float] = None
    mfu: Optional[float] = None
    peak_flops: Optional[float] = None
    peak_source: str = ""
    environment: Dict[str, Any] = dataclasses.field(default_factory=dict)
    breakdown: Optional[Any] = None
    projection: Optional[Dict[str, Any]] = None
    diagnosis: List[Dict[str, Any]] = dataclasses.field(default_factory=list)
    unit: str = "images"  # what one example is: images, sequences (BERT) or examples

    def to_dict(self):
        return dataclasses.asdict(self)

    def total_line(self):
        return f"total {self.unit}/sec: {self.images_per_sec['mean']:.2f}"
