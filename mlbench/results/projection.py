"""The projection records stored in a benchmark result (`results.records`): the
projected cells, the reference convergence and the time to train, made by
`mlbench.projector` and read by reports without it."""
import dataclasses
from typing import List, Optional

from mlbench.results import codec


@dataclasses.dataclass(frozen=True)
class ProjectedCell:
    """One projected cell: images/sec (point, low = no overlap, high = full overlap) and
    the breakdown of the point estimate's step, in seconds."""
    devices: int
    images_per_sec: float
    low: float
    high: float
    linear: float
    compute_s: float
    exposed_s: float
    hidden_s: float
    derate_s: float
    measured: Optional[float] = None

    @property
    def error(self):
        return None if self.measured is None else self.images_per_sec / self.measured - 1

    @property
    def linear_error(self):
        return None if self.measured is None else self.linear / self.measured - 1

    def in_band(self, tolerance=0.03):
        return (self.measured is not None and
                self.low * (1 - tolerance) <= self.measured <= self.high * (1 + tolerance))


@dataclasses.dataclass(frozen=True)
class Convergence:
    """Samples to converge at one global batch size, with rcp_checker's band.

    Attributes:
      benchmark / global_batch_size / ruleset: what was asked.
      samples / samples_low / samples_high: the reference olympic mean and the range of
        means rcp_checker accepts ('Min Epochs' to the mirrored bound), in samples.
      epochs: the mean in epochs (ResNet's unit), None for BERT (whose RCPs are samples).
      source: 'RCP at batch B' or 'interpolated between RCPs at A and B' (rcp_checker's).
      rcp: MLCommons' RCP file for the ruleset, or the custom file given.
    """
    benchmark: str
    global_batch_size: int
    ruleset: str
    samples: float
    samples_low: float
    samples_high: float
    epochs: Optional[float]
    source: str
    rcp: str


@dataclasses.dataclass(frozen=True)
class TimeToTrain:
    """Minutes (and dollars) to the quality target, with the RCP's band.

    `minutes` = `train_minutes` + `eval_minutes`; `minutes_low` / `minutes_high` come from
    the band of samples to converge. `excluded` lists what MLPerf's clock does not count.
    """
    convergence: Convergence
    devices: int
    images_per_sec: float
    eval_images_per_sec: float
    eval_rate_source: str
    evals: int
    train_minutes: float
    eval_minutes: float
    minutes: float
    minutes_low: float
    minutes_high: float
    price_per_device_hour: Optional[float] = None
    price_source: Optional[str] = None
    cost: Optional[float] = None
    cost_low: Optional[float] = None
    cost_high: Optional[float] = None
    excluded: str = ("initialisation and compilation (before MLPerf's run_start, outside "
                     "the timed window)")
    label: str = "projection (not measured)"

    def to_dict(self):
        return dataclasses.asdict(self)

    def line(self):
        c = self.convergence
        cost = (f"; ${self.cost:,.2f} [{self.cost_low:,.2f}–{self.cost_high:,.2f}] at "
                f"${self.price_per_device_hour:g}/device-hour ({self.price_source})"
                if self.cost is not None else "")
        return (f"time to train {c.benchmark} at global batch {c.global_batch_size} on "
                f"{self.devices} device(s): {_m(self.minutes)} min [{_m(self.minutes_low)}–"
                f"{_m(self.minutes_high)}] ({_m(self.train_minutes)} training "
                f"{c.samples:,.0f} samples at {self.images_per_sec:,.1f}/s + "
                f"{_m(self.eval_minutes)} for {self.evals} evals at "
                f"{self.eval_images_per_sec:,.1f}/s, {self.eval_rate_source}; samples "
                f"{c.source}){cost}; excluded: {self.excluded}. A {self.label}.")


def _m(minutes):
    """Minutes to three significant figures (a CPU-scale run lasts under one)."""
    return f"{minutes:.3g}" if minutes < 100 else f"{minutes:.0f}"


@dataclasses.dataclass(frozen=True)
class Projection:
    """Projected cells of one model on one platform, from a measurement on `base_devices`
    (`projector.throughput`); stored in a benchmark result beside the figures it follows
    from (`projector.attach`), with, where MLCommons' reference points cover the global
    batch, the minutes to the MLPerf target. A projection, never a measurement: `label`
    says so.

    Attributes:
      pattern: the communication pattern the projector modelled (`projector.throughput`).
      not_estimated: why a device count has no time to train (no RCP at its batch).
    """
    model: str
    platform: str
    pattern: str
    batch_size: int
    base_devices: int
    images_per_sec: float
    gradient_bytes: int
    cells: List[ProjectedCell]
    label: str = "projection (not measured)"
    time_to_train: List[TimeToTrain] = dataclasses.field(default_factory=list)
    not_estimated: List[str] = dataclasses.field(default_factory=list)

    def to_dict(self):
        """The projection's JSON, each cell with its error against a measured figure."""
        return dict(codec.encode(self), cells=[dict(codec.encode(c), error=c.error)
                                                for c in self.cells])
