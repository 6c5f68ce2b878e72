"""MLPerf Inference scenarios on MLCommons' own LoadGen (`mlcommons-loadgen`).

LoadGen issues the queries (one sample at a time for SingleStream, 8 per query for
MultiStream, Poisson arrivals for Server, everything at once for Offline), times them
from issue to completion, and judges the run itself: its summary's figures and its
VALID / INVALID verdict are what this module reports, read back from LoadGen's own
`mlperf_log_summary.txt`, never recomputed. mlbench supplies the system under test: the
model's forward pass on samples made on the device beforehand (synthetic, shaped as the
model's input), batched as LoadGen hands them over (Offline: up to `batch_size` at a
time), answered from a worker thread so LoadGen's issuing thread never waits on the model.

MLPerf's rules ask for at least 600 s per scenario; `min_duration_s` is that knob (a
short run is LoadGen-valid against the settings it was given, not an MLPerf result).
"""
import dataclasses
import os
import queue
import re
import threading
from typing import Dict

import numpy as np

SCENARIOS = ("SingleStream", "MultiStream", "Server", "Offline")


@dataclasses.dataclass(frozen=True)
class ScenarioResult:
    """One LoadGen run, as LoadGen's summary states it.

    Attributes:
      scenario: 'SingleStream', 'MultiStream', 'Server' or 'Offline'.
      valid: LoadGen's verdict ("Result is : VALID").
      figure: the scenario's metric name as LoadGen prints it (e.g. '90th percentile
        latency (ns)', 'Samples per second') and its value in `value`.
      summary: every "name : value" line of the summary, as written.
      log_dir: where LoadGen's own logs are.
      samples_answered: samples the model answered (LoadGen's count is in `summary`).
      reasons: why LoadGen says INVALID: its unmet checks ("Min duration satisfied :
        NO") and its recommendations, as written.
    """
    scenario: str
    valid: bool
    figure: str
    value: float
    summary: Dict[str, str]
    log_dir: str
    samples_answered: int
    reasons: tuple = ()


# the figure each scenario is judged by, as LoadGen's summary names it
FIGURES = {"SingleStream": "90.0th percentile latency (ns)",
           "MultiStream": "99.0th percentile latency (ns)",
           "Server": "Completed samples per second",
           "Offline": "Samples per second"}


def check_scenario(scenario, server_target_qps=None, server_latency_ms=None):
    """Bad scenario settings, refused before anything is built."""
    if scenario not in SCENARIOS:
        raise ValueError(f"`scenario` ({scenario!r}) must be one of {list(SCENARIOS)}.")
    if scenario == "Server" and not (server_target_qps and server_target_qps > 0 and
                                     server_latency_ms and server_latency_ms > 0):
        raise ValueError("Server needs `server_target_qps` and `server_latency_ms` > 0 "
                         f"(given {server_target_qps!r}, {server_latency_ms!r}); MLPerf's "
                         "bound is 15 ms for ResNet-50, 130 ms for BERT.")


# queries LoadGen's early stopping needs before it can judge a p99 (it says so in an
# INVALID summary: "Need to process at least 662 queries for early stopping")
EARLY_STOPPING_QUERIES = {"MultiStream": 662}


def run(forward, make_samples, scenario, log_dir, batch_size=1, min_duration_s=1.0,
        min_query_count=None, server_target_qps=None, server_latency_ms=None,
        offline_expected_qps=None, sample_count=64):
    """Runs one LoadGen scenario on `forward` and returns LoadGen's verdict and figure.

    Args:
      forward: a function of a batch of inputs (a tensor stacked on the first axis)
        whose outputs can be read with `.numpy()`.
      make_samples: `make_samples(n)` gives `n` input samples as one batch (on the device).
      scenario: one of SCENARIOS.
      log_dir: LoadGen's logs go here (created).
      batch_size: the most samples one forward pass takes (Offline, MultiStream).
      min_duration_s, min_query_count: LoadGen's minimum run (MLPerf: 600 s); the
        query count defaults to what LoadGen's early stopping needs (MultiStream: 662).
      server_target_qps, server_latency_ms: Server's arrival rate and latency bound
        (MLPerf's bound: 15 ms ResNet-50, 130 ms BERT).
      offline_expected_qps: Offline's expected samples/sec (sizes its one query).
      sample_count: samples in LoadGen's sample library (made once, before timing).
    """
    import mlperf_loadgen as lg
    check_scenario(scenario, server_target_qps, server_latency_ms)
    os.makedirs(log_dir, exist_ok=True)
    samples = make_samples(sample_count)
    per_query = 8 if scenario == "MultiStream" else 1
    seconds = _calibrate(forward, samples, min(batch_size, sample_count) if scenario ==
                         "Offline" else per_query)
    sut = _SystemUnderTest(forward, samples, batch_size, lg)
    settings = _settings(lg, scenario, min_duration_s, min_query_count, server_target_qps,
                         server_latency_ms, offline_expected_qps or
                         # twice the calibrated rate: Offline's one query is sized from it
                         # and must outlast the minimum duration (LoadGen's advice)
                         2 * min(batch_size, sample_count) / seconds)
    if scenario in ("SingleStream", "MultiStream"):
        # sizes the queries LoadGen pre-makes; half the fastest pass, as LoadGen stops at
        # the minimum duration anyway and a machine faster than at calibration would
        # otherwise run out of queries ("Min duration satisfied : NO")
        setattr(settings, f"{'single' if per_query == 1 else 'multi'}_stream_expected_"
                          "latency_ns", max(int(seconds * 1e9 / 2), 1))
    log_settings = lg.LogSettings()
    log_settings.log_output.outdir = os.path.abspath(log_dir)
    log_settings.log_output.copy_summary_to_stdout = False
    qsl = lg.ConstructQSL(sample_count, sample_count, lambda ids: None, lambda ids: None)
    handle = lg.ConstructSUT(sut.issue, sut.flush)
    try:
        lg.StartTestWithLogSettings(handle, qsl, settings, log_settings)
    finally:
        sut.close()
        lg.DestroySUT(handle)
        lg.DestroyQSL(qsl)
    summary = read_summary(os.path.join(log_dir, "mlperf_log_summary.txt"))
    figure = FIGURES[scenario]
    return ScenarioResult(scenario, summary.get("Result is") == "VALID", figure,
                          float(summary.get(figure, "nan")), summary, log_dir,
                          sut.answered, _reasons(log_dir))


def _calibrate(forward, samples, batch):
    """Seconds of the fastest of 5 forward passes on `batch` samples (after one that
    traces): LoadGen's expected latency / QPS, which sizes the queries it generates."""
    import time
    _answer(forward, samples, list(range(batch)))
    times = []
    for _ in range(5):
        began = time.perf_counter()
        _answer(forward, samples, list(range(batch)))
        times.append(time.perf_counter() - began)
    return min(times)


def _reasons(log_dir):
    """LoadGen's unmet checks and recommendations from its summary, as written."""
    reasons, recommending = [], False
    with open(os.path.join(log_dir, "mlperf_log_summary.txt")) as f:
        for line in f:
            text = line.strip()
            if text.startswith("="):
                recommending = False
            if ": NO" in text:
                reasons.append(text)
            elif text == "Recommendations:":
                recommending = True
            elif recommending and text.startswith("*"):
                reasons.append(text.lstrip("* "))
    return tuple(reasons)


def _settings(lg, scenario, min_duration_s, min_query_count, server_target_qps,
              server_latency_ms, offline_expected_qps):
    settings = lg.TestSettings()
    settings.scenario = getattr(lg.TestScenario, scenario)
    settings.mode = lg.TestMode.PerformanceOnly
    settings.min_duration_ms = int(min_duration_s * 1000)
    settings.min_query_count = int(min_query_count or
                                   EARLY_STOPPING_QUERIES.get(scenario, 1))
    if scenario == "Server":
        settings.server_target_qps = float(server_target_qps)
        settings.server_target_latency_ns = int(server_latency_ms * 1e6)
    if scenario == "Offline" and offline_expected_qps:
        settings.offline_expected_qps = float(offline_expected_qps)
    return settings


def _answer(forward, samples, indices):
    """The forward pass on the samples at `indices`, read back to the host."""
    import tensorflow as tf
    batch = tf.gather(samples, np.asarray(indices, np.int32))
    tf.nest.map_structure(lambda t: t.numpy(), forward(batch))


class _SystemUnderTest:
    """LoadGen's SUT: queries are queued by LoadGen's thread and answered by one worker
    (the model runs one batch at a time, as a single-stream device would)."""

    def __init__(self, forward, samples, batch_size, lg):
        self.forward, self.samples, self.batch_size, self.lg = forward, samples, batch_size, lg
        self.answered = 0
        self.queries = queue.Queue()
        self.worker = threading.Thread(target=self._work, daemon=True)
        self.worker.start()

    def issue(self, query_samples):
        self.queries.put(list(query_samples))

    def flush(self):
        pass

    def close(self):
        self.queries.put(None)
        self.worker.join()

    def _work(self):
        while True:
            query = self.queries.get()
            if query is None:
                return
            for start in range(0, len(query), self.batch_size):
                part = query[start:start + self.batch_size]
                _answer(self.forward, self.samples, [s.index for s in part])
                self.lg.QuerySamplesComplete([self.lg.QuerySampleResponse(s.id, 0, 0)
                                              for s in part])
                self.answered += len(part)


def read_summary(path):
    """{name: value} of LoadGen's summary lines ("Samples per second: 123.4",
    "Result is : VALID"), as written."""
    if not os.path.exists(path):
        raise RuntimeError(f"LoadGen wrote no summary at {path}: the run did not finish.")
    summary = {}
    with open(path) as f:
        for line in f:
            match = re.match(r"^\s*([^:=]+?)\s*:\s*(.+?)\s*$", line)
            if match and not line.startswith("="):
                summary.setdefault(match.group(1), match.group(2))
    return summary


def table(results):
    """The scenarios as a Markdown table, LoadGen's figures as it states them."""
    lines = ["| scenario | LoadGen verdict | figure | value |", "|---|---|---|---:|"]
    for r in results:
        value = f"{r.value / 1e6:.2f} ms" if "(ns)" in r.figure else f"{r.value:,.1f}"
        lines.append(f"| {r.scenario} | {'VALID' if r.valid else 'INVALID'} | "
                     f"{r.figure.replace(' (ns)', '')} | {value} |")
    return "\n".join(lines)


def model_forward(model, precision="auto", jit_compile=False, num_classes=1000,
                  seed=0) -> tuple:
    """(forward, make_samples, policy) for a zoo name, a Keras model, a model_dir or a
    SavedModel, as `infer` builds them; a model of several inputs (BERT) is refused."""
    from mlbench.bench.infer import compiled_forward
    forward, source, policy = compiled_forward(model, precision, num_classes, jit_compile)
    if isinstance(source.replica_batch(1, seed), dict):  # several named inputs
        raise ValueError(f"`model` ({model!r}): LoadGen scenarios take models of one input "
                         "here; several inputs (BERT's) are not wired yet.")
    return forward, (lambda n: source.replica_batch(n, seed)[0]), policy


def default_log_dir(model_name, scenario):
    return os.path.join("runs", "loadgen", f"{model_name}_{scenario}")
