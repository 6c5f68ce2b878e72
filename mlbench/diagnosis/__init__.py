"""Why a run was slow or stopped: findings with their measured figures.

Every train and benchmark result carries a `diagnosis`, a list of findings
(`Finding` records), each read from measurements the run made: the input
pipeline timed alone (`pipeline`), the step's traces and XLA fallback
(`compile`), skipped steps, the loss scale and the first non-finite tensor
(`numerics`), per-device throughput against one device (`scaling`). Faults
that end a run (a full disk, a silent worker) are named where they happen
(`mlbench.training.checkpoints`, `mlbench.distribute.launch`).
"""
from mlbench.diagnosis.findings import Finding, lines

__all__ = ["Finding", "lines"]
