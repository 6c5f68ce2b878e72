"""`mlbench compare` for training runs, MLPerf run sets and inference sweeps, and the
environment check every comparison makes.

A train run is one sitting: its time to quality is steps to the target × time per step.
Steps to the target are exact (the same seed and data give the same count), so a
different count is a real difference in convergence; throughput of a single run has no
spread of its own, so examples/sec and time to quality are judged against a stated band
(SINGLE_RUN_BAND) rather than a measured one. MLPerf run sets carry several runs: their
score's band is the runs' own spread, as benchmark comparisons use theirs.
"""
import dataclasses
import math
import statistics
from typing import List, Optional

SINGLE_RUN_BAND = 0.05  # ±5 %: a single run's throughput varies about this much on a
#                         shared 2-core machine between sittings (docs/reports.md)
NOISE_SIGMAS = 2.0
MACHINE_KEYS = ("machine", "cpu", "cpu_cores", "accelerator")
STACK_KEYS = ("tensorflow", "cuda_cudnn (TF build)")  # not mlbench's git hash: comparing two
#                                                        commits is what compare is for


def environment_differences(baseline, candidate):
    """['different machines', 'different stack'] as the two environments differ (keys
    missing on either side are not compared; an empty environment compares nothing)."""
    notes = []
    for label, keys in (("different machines", MACHINE_KEYS), ("different stack", STACK_KEYS)):
        differ = [k for k in keys if k in baseline and k in candidate
                  and baseline[k] != candidate[k]]
        if differ:
            pairs = ", ".join(f"{k}: {baseline[k]} vs {candidate[k]}" for k in differ)
            notes.append(f"{label} ({pairs})")
    return notes


@dataclasses.dataclass
class RunRow:
    quantity: str
    baseline: Optional[float]
    candidate: Optional[float]
    verdict: str
    regression: bool = False

    @property
    def ratio(self):
        if self.baseline in (None, 0) or self.candidate is None:
            return None
        return self.candidate / self.baseline

    def to_dict(self):
        return dict(dataclasses.asdict(self), ratio=self.ratio)


def header_lines(baseline, candidate, environment, what=""):
    """A comparison table's first lines: what is compared, and a WARNING per difference
    between the two environments."""
    return [f"baseline {baseline}  →  candidate {candidate}{what}"] + [
        f"WARNING: {note}: the figures are not from one environment" for note in environment]


@dataclasses.dataclass
class RunComparison:
    """Candidate vs baseline for two train runs or two MLPerf run sets."""
    kind: str
    baseline: str
    candidate: str
    rows: List[RunRow]
    environment: List[str]
    threshold: Optional[float]
    allow_incomparable: bool = False

    @property
    def regressed(self):
        return any(r.regression and not (self.allow_incomparable and
                                         r.verdict.startswith("not comparable"))
                   for r in self.rows)

    def table(self):
        lines = header_lines(self.baseline, self.candidate, self.environment,
                             f" ({self.kind} runs)")
        lines.append("quantity\tbaseline\tcandidate\tratio\tverdict")
        for r in self.rows:
            ratio = "-" if r.ratio is None else f"{r.ratio:.3f}"
            lines.append(f"{r.quantity}\t{_figure(r.baseline)}\t{_figure(r.candidate)}\t{ratio}"
                         f"\t{r.verdict}" + ("  REGRESSION" if r.regression else ""))
        return "\n".join(lines)

    def to_dict(self):
        return {"kind": self.kind, "baseline": self.baseline, "candidate": self.candidate,
                "environment": self.environment, "rows": [r.to_dict() for r in self.rows],
                "regressed": self.regressed,
                "threshold_pct": None if self.threshold is None else 100 * self.threshold}


def _figure(value):
    return "-" if value is None else f"{value:.4g}"


def steps_to_target(result):
    """The step of the run's first eval meeting its target (None: not reached)."""
    target = result.arguments.get("target") or {}
    for record in result.history:
        metrics = record.get("metrics")
        if metrics and target and all(metrics.get(k, -math.inf) >= v for k, v in target.items()):
            return record["step"]
    return None


def _judged(quantity, b, c, band, threshold, lower_is_better=True):
    """A faster / slower / within-noise verdict beyond `band` (a fraction): for a time
    lower is better, for a rate higher is."""
    if not b or c is None:  # a CI gate fails on it: garbage must not pass as "no change"
        return RunRow(quantity, b, c, "not comparable (missing on a side)",
                      threshold is not None)
    ratio = c / b
    gain = 1 - ratio if lower_is_better else ratio - 1
    verdict = "faster" if gain > band else "slower" if -gain > band else "within noise"
    return RunRow(quantity, b, c, verdict,
                  threshold is not None and verdict == "slower" and -gain > threshold)


MIN_BLOCKS = 3  # timed blocks a run needs for its own spread


def block_spread(result):
    """The relative spread (stdev / mean) of a train run's per-block examples/sec, or None
    when it recorded fewer than MIN_BLOCKS timed blocks (or is older than the record)."""
    rates = [r["block_examples_per_second"] for r in result.history
             if isinstance(r, dict) and r.get("block_examples_per_second")]
    if len(rates) < MIN_BLOCKS:
        return None
    return statistics.stdev(rates) / statistics.fmean(rates)


def _judged_rate(b, c, threshold):
    """examples/sec judged against a band from both runs' own block-to-block spread (a
    shared machine moves a single run's rate by tens of percent); "not judged" without
    one."""
    rate_b, rate_c = b.examples_per_second, c.examples_per_second
    spreads = [block_spread(b), block_spread(c)]
    if rate_b and rate_c is not None and None in spreads:
        return RunRow("examples/sec", rate_b, rate_c,
                      f"not judged (fewer than {MIN_BLOCKS} timed blocks on a side)")
    band = NOISE_SIGMAS * math.hypot(*spreads) if None not in spreads else SINGLE_RUN_BAND
    return _judged("examples/sec", rate_b, rate_c, band, threshold, lower_is_better=False)


def compare_train(base, cand, threshold=None):
    """Two train runs: steps to the target (exact), time to quality and examples/sec."""
    b, c = base.record, cand.record
    steps_b, steps_c = steps_to_target(b), steps_to_target(c)
    if steps_b is None or steps_c is None:
        steps_verdict = "not comparable (not reached on a side)"  # shown, not a failure
    else:
        steps_verdict = ("fewer steps" if steps_c < steps_b else "more steps"
                         if steps_c > steps_b else "same steps")
    rows = [RunRow("steps to target", steps_b, steps_c, steps_verdict),
            _judged("time to quality (s)", b.time_to_quality_s, c.time_to_quality_s,
                    SINGLE_RUN_BAND, threshold),
            _judged_rate(b, c, threshold)]
    for name in sorted(set(b.final_metrics) & set(c.final_metrics)):
        rows.append(RunRow(f"final {name}", b.final_metrics[name], c.final_metrics[name],
                           "(shown)"))
    return RunComparison("train", base.path, cand.path, rows,
                         environment_differences(base.environment, cand.environment), threshold)


def _minutes(run_set):
    return [r.minutes for r in run_set.runs if r.minutes is not None]


def compare_mlperf(base, cand, threshold=None):
    """Two MLPerf run sets: the score (minutes to train), banded by the runs' own spread."""
    b, c = base.record.score.minutes, cand.record.score.minutes
    spreads = []
    for side in (base.record, cand.record):
        minutes = _minutes(side)
        spreads.append(statistics.stdev(minutes) / statistics.fmean(minutes)
                       if len(minutes) > 1 else SINGLE_RUN_BAND / NOISE_SIGMAS)
    band = NOISE_SIGMAS * math.hypot(*spreads)
    rows = [_judged("minutes to train (score)", b, c, band, threshold)]
    rows.append(RunRow("runs", len(base.record.runs), len(cand.record.runs), "(shown)"))
    return RunComparison("mlperf", base.path, cand.path, rows,
                         environment_differences(base.environment, cand.environment), threshold)


def _latency_spread(row):
    """The relative uncertainty of a sweep row's median latency: its timed batches' spread
    from median to p90, over √batches (about the median's standard error)."""
    return (row.p90_ms - row.p50_ms) / row.p50_ms / math.sqrt(row.batches)


def compare_inference(base, cand, threshold=None):
    """Two inference sweeps, per batch size: the median latency and examples/sec, each
    judged beyond a band from both sweeps' own batch-to-batch spread and never narrower
    than SINGLE_RUN_BAND (a sweep is one sitting); p99 is shown, not judged (a tail of a
    few dozen batches has no spread of its own to judge it by)."""
    left = {r.batch_size: r for r in base.record.rows}
    right = {r.batch_size: r for r in cand.record.rows}
    rows = []
    for batch in sorted(set(left) | set(right)):
        b, c = left.get(batch), right.get(batch)
        if b is None or c is None:
            rows.append(_judged(f"batch {batch} examples/sec", b and b.examples_per_sec,
                                c and c.examples_per_sec, SINGLE_RUN_BAND, threshold))
            continue
        band = max(SINGLE_RUN_BAND,
                   NOISE_SIGMAS * math.hypot(_latency_spread(b), _latency_spread(c)))
        rows += [_judged(f"batch {batch} p50 latency (ms)", b.p50_ms, c.p50_ms, band,
                         threshold),
                 _judged(f"batch {batch} examples/sec", b.examples_per_sec,
                         c.examples_per_sec, band, threshold, lower_is_better=False),
                 RunRow(f"batch {batch} p99 latency (ms)", b.p99_ms, c.p99_ms, "(shown)")]
    differences = environment_differences(base.environment, cand.environment)
    if base.record.precision != cand.record.precision:
        differences.append(f"different precision ({base.record.precision} vs "
                           f"{cand.record.precision})")
    return RunComparison("inference", base.path, cand.path, rows, differences, threshold)
