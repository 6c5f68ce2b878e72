"""The records of `mlbench infer`: one LatencyStats per batch size in an InferenceResult
(kind 'inference', written and read by `results.files`)."""
import dataclasses
from typing import Any, Dict, List, Optional


@dataclasses.dataclass(frozen=True)
class LatencyStats:
    """One batch size's figures (latencies in milliseconds).

    Attributes:
      batches: timed batches; warmup_batches: run before, not timed.
      examples_per_sec: batch_size × batches ÷ wall_s (the timed wall time).
      stopped_by: 'count' (enough batches and seconds), or 'budget' (max_seconds ran out
        first: fewer batches than asked).
      peak_memory_mb: the peak while this batch size ran (MiB; what it measures is the
        result's `memory`), None where it cannot be read.
    """
    batch_size: int
    batches: int
    warmup_batches: int
    examples_per_sec: float
    wall_s: float
    mean_ms: float
    p50_ms: float
    p90_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float
    stopped_by: str = "count"
    peak_memory_mb: Optional[float] = None


@dataclasses.dataclass(frozen=True)
class InferenceResult:
    """`mlbench infer`: one row of latency and throughput per batch size.

    Attributes:
      model: the zoo name, or your model's name.
      precision / jit_compile: what ran.
      device: where the forward pass ran ('/cpu:0', '/gpu:0').
      inputs: 'synthetic' (made on the device, so host copies are out of the timing).
      rows: a LatencyStats per batch size, in the order run.
      skipped: {batch size: why it did not run} (a time budget spent, out of memory).
      memory: what each row's peak_memory_mb measures (GPU allocator peak, or the
        process's resident high-water mark on a CPU).
    """
    model: str
    precision: str
    jit_compile: bool
    device: str
    inputs: str
    rows: List[LatencyStats]
    skipped: Dict[str, str] = dataclasses.field(default_factory=dict)
    environment: Dict[str, Any] = dataclasses.field(default_factory=dict)
    memory: str = ""
