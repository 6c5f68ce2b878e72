"""`mlbench compare`: per configuration, candidate vs baseline, with a verdict from the
runs' own spread (asv and pytest-benchmark judge the same way: a change is real only
beyond the noise of both sides).

Spread of one side: the relative standard deviation of its per-run total images/sec
(tf_cnn_benchmarks' "total images/sec" of each run); with a single run, the relative
uncertainty of that run's mean (the ± of its per-step rates). The noise band of the
ratio is two of those combined: 2·√(s_b² + s_c²). Faster or slower only beyond it.
"""
import dataclasses
import math
import statistics
from typing import List, Optional

from mlbench.reporting import compare_runs, sources

NOISE_SIGMAS = 2.0  # ≈ 95 % of ratios between two same-configuration sittings


@dataclasses.dataclass
class Row:
    configuration: tuple
    baseline: float
    candidate: float
    ratio: float
    noise: float  # the band's half-width, as a fraction of 1
    verdict: str  # faster | slower | within noise
    regression: bool = False

    def to_dict(self):
        model, devices, data, batch, update, precision, forward = self.configuration
        return {"model": model, "num_devices": devices, "data": data, "batch_size": batch,
                "variable_update": update, "precision": precision, "forward_only": forward,
                "baseline": self.baseline, "candidate": self.candidate, "ratio": self.ratio,
                "noise_pct": 100 * self.noise, "verdict": self.verdict,
                "regression": self.regression}


@dataclasses.dataclass
class Comparison:
    baseline: str
    candidate: str
    rows: List[Row]
    only_in_baseline: List[tuple]
    only_in_candidate: List[tuple]
    threshold: Optional[float]
    environment: List[str] = dataclasses.field(default_factory=list)
    allow_incomparable: bool = False

    @property
    def regressed(self):
        """A row slower beyond the threshold, or, with a threshold, a configuration of the
        baseline the candidate lacks (a CI gate must not pass on a missing result)."""
        missing = bool(self.only_in_baseline or not self.rows)
        return any(r.regression for r in self.rows) or (
            self.threshold is not None and missing and not self.allow_incomparable)

    def table(self):
        lines = compare_runs.header_lines(self.baseline, self.candidate, self.environment)
        lines += ["model\tdevices\tdata\tbatch\tbaseline\tcandidate\tratio\tnoise\tverdict"]
        for r in self.rows:
            c = r.configuration
            lines.append(f"{c[0]}\t{c[1]}\t{c[2]}\t{c[3]}\t{r.baseline:.1f}\t{r.candidate:.1f}"
                         f"\t{r.ratio:.3f}\t±{100 * r.noise:.1f}%\t{r.verdict}"
                         + ("  REGRESSION" if r.regression else ""))
        for label, missing in (("only in baseline", self.only_in_baseline),
                               ("only in candidate", self.only_in_candidate)):
            if missing:
                lines.append(f"{label}: " + "; ".join(f"{c[0]} x{c[1]} {c[2]}" for c in missing))
        if self.threshold is not None:
            lines.append(f"regression: slower by more than {100 * self.threshold:g} % and "
                         f"beyond the noise band — {'found' if self.regressed else 'none'}")
        return "\n".join(lines)

    def to_dict(self):
        return {"baseline": self.baseline, "candidate": self.candidate,
                "threshold_pct": None if self.threshold is None else 100 * self.threshold,
                "rows": [r.to_dict() for r in self.rows], "regressed": self.regressed,
                "environment": self.environment,
                "only_in_baseline": [list(c) for c in self.only_in_baseline],
                "only_in_candidate": [list(c) for c in self.only_in_candidate]}


def parse_threshold(text):
    """'5%' or '0.05' → 0.05."""
    try:
        value = float(str(text).strip().rstrip("%")) / (100 if str(text).strip().endswith("%")
                                                         else 1)
    except ValueError:
        value = -1.0
    if not 0 < value < 1:
        raise ValueError(f"`fail_on_regression` ({text!r}) must be a fraction in (0, 1) or a "
                         "percentage such as 5%.")
    return value


def spread(result):
    """Relative spread of one result (see the module docstring)."""
    totals = sources.run_totals(result)
    mean = statistics.fmean(totals)
    if len(totals) > 1:
        return statistics.stdev(totals) / mean
    run = result.runs[0]
    return run.images_per_sec_stderr / run.images_per_sec_mean


def judge(baseline, candidate, threshold=None):
    """One Row from two benchmark results of the same configuration."""
    b, c = baseline.images_per_sec.mean, candidate.images_per_sec.mean
    ratio = c / b
    noise = NOISE_SIGMAS * math.hypot(spread(baseline), spread(candidate))
    verdict = ("faster" if ratio - 1 > noise else "slower" if 1 - ratio > noise
               else "within noise")
    regression = (threshold is not None and verdict == "slower" and 1 - ratio > threshold)
    return Row(sources.configuration(baseline), b, c, ratio, noise, verdict, regression)


def compare(baseline, candidate, fail_on_regression=None, allow_incomparable=False):
    """Compares two benchmark runs or suites (paths or `sources.Source`), two train runs,
    two MLPerf run sets or two inference sweeps (`mlbench.reporting.compare_runs`).

    Args:
      baseline / candidate: directories (or files) a benchmark or suite wrote.
      fail_on_regression: '5%' or 0.05: rows slower beyond this and the noise band are
        marked as regressions (`Comparison.regressed`), and so is a figure or a
        configuration missing on the candidate's side.
      allow_incomparable: with `fail_on_regression`, a missing figure or configuration
        is shown but does not fail.
    """
    result = _compare(baseline, candidate, fail_on_regression)
    return dataclasses.replace(result, allow_incomparable=allow_incomparable)


def _compare(baseline, candidate, fail_on_regression=None):
    threshold = None if fail_on_regression is None else parse_threshold(fail_on_regression)
    base, cand = (s if isinstance(s, sources.Source) else sources.load(s)
                  for s in (baseline, candidate))
    kinds = {s.kind for s in (base, cand)}
    if kinds == {"train"}:
        return compare_runs.compare_train(base, cand, threshold)
    if kinds == {"mlperf"}:
        return compare_runs.compare_mlperf(base, cand, threshold)
    if kinds == {"inference"}:
        return compare_runs.compare_inference(base, cand, threshold)
    if not kinds <= {"suite", "benchmark"}:
        raise ValueError(f"{base.path!r} is a {base.kind} run and {cand.path!r} a {cand.kind} "
                         "one: compare takes two benchmark results or suites, two train runs, "
                         "two MLPerf run sets or two inference sweeps.")
    left = {sources.configuration(r): r for r in base.results}
    right = {sources.configuration(r): r for r in cand.results}
    rows = [judge(left[k], right[k], threshold) for k in left if k in right]
    return Comparison(base.path, cand.path, rows, [k for k in left if k not in right],
                      [k for k in right if k not in left], threshold,
                      compare_runs.environment_differences(base.environment, cand.environment))
