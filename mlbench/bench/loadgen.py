"""MLPerf Inference scenarios on MLCommons' own LoadGen (`mlcommons-loadgen`).

LoadGen issues the queries (one sample at a time for SingleStream, 8 per query for
MultiStream, Poisson arrivals for Server, everything at once for Offline), times them
from issue to completion, and judges the run itself: its summary's figures and its
VALID / INVALID verdict are what this module reports, read back from LoadGen's own
`mlperf_log_summary.txt`, never recomputed. mlbench supplies the system under test: the
model's forward pass on samples put on the device beforehand (a model_dir's own eval set,
else synthetic samples shaped as the model's input), batched as LoadGen hands them over
(Offline: up to `batch_size` at a time), answered from a worker thread so LoadGen's
issuing thread never waits on the model.

The settings are LoadGen's own MLPerf ones (its built-in mlperf.conf: 600 s, the query
counts, ResNet-50's 15 ms Server bound, 1,024 library samples); a run set below them
(`quick`, a shorter minimum duration) is LoadGen-valid against what it was given and is
labelled "not MLPerf-compliant" with each departure named. Accuracy mode is
`mlbench.bench.accuracy`.
"""
import dataclasses
import os
import queue
import re
import threading
from typing import Any, Callable, Dict, Optional

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
      departures: how the settings fall short of MLPerf's for the model (a short
        minimum duration, `--quick`, ...); none: an MLPerf-compliant run.
    """
    scenario: str
    valid: bool
    figure: str
    value: float
    summary: Dict[str, str]
    log_dir: str
    samples_answered: int
    reasons: tuple = ()
    departures: tuple = ()

    @property
    def settings(self):
        """How the run's settings stand against MLPerf's, as every output labels it."""
        return ("MLPerf" if not self.departures else
                "not MLPerf-compliant: " + "; ".join(self.departures))


# the figure each scenario is judged by, as LoadGen's summary names it
FIGURES = {"SingleStream": "90.0th percentile latency (ns)",
           "MultiStream": "99.0th percentile latency (ns)",
           "Server": "Completed samples per second",
           "Offline": "Samples per second"}


def check_scenario(scenario, server_target_qps=None, server_latency_ms=None):
    """Bad scenario settings, refused before anything is built."""
    if scenario not in SCENARIOS:
        raise ValueError(f"`scenario` ({scenario!r}) must be one of {list(SCENARIOS)}.")
    if scenario == "Server" and not (server_target_qps and server_target_qps > 0):
        raise ValueError(f"Server needs `server_target_qps` > 0 (given {server_target_qps!r}):"
                         " the rate LoadGen issues queries at.")
    if server_latency_ms is not None and not server_latency_ms > 0:
        raise ValueError(f"`server_latency_ms` ({server_latency_ms!r}) must be > 0; MLPerf's "
                         "bound is 15 ms for ResNet-50, 130 ms for BERT.")


# queries LoadGen's early stopping needs before it can judge a p99 (it says so in an
# INVALID summary: "Need to process at least 662 queries for early stopping")
EARLY_STOPPING_QUERIES = {"MultiStream": 662}
# `quick`: a short run, labelled non-compliant wherever it is reported
QUICK_SECONDS, QUICK_QUERIES, QUICK_LIBRARY = 1.0, 64, 64


def run(forward, make_samples, scenario, log_dir, batch_size=1, mlperf_model=None,
        quick=False, min_duration_s=None, min_query_count=None, server_target_qps=None,
        server_latency_ms=None, offline_expected_qps=None, sample_count=None):
    """Runs one LoadGen scenario on `forward` and returns LoadGen's verdict and figure.

    The settings are LoadGen's own for MLPerf (its built-in mlperf.conf) for
    `mlperf_model` (e.g. 'resnet50'; None: the entries every model shares), with the
    expected latency / QPS calibrated here; anything set below them is a departure,
    named in the result.

    Args:
      forward: a function of a batch of inputs (a tensor stacked on the first axis)
        whose outputs can be read with `.numpy()`.
      make_samples: `make_samples(n)` gives `n` input samples as one batch (on the device).
      scenario: one of SCENARIOS.
      log_dir: LoadGen's logs go here (created).
      batch_size: the most samples one forward pass takes (Offline, MultiStream).
      quick: a short run (QUICK_SECONDS, QUICK_QUERIES, a library of QUICK_LIBRARY
        samples): LoadGen-valid against those settings, not an MLPerf result.
      min_duration_s, min_query_count: LoadGen's minimum run (mlperf.conf: 600 s).
      server_target_qps, server_latency_ms: Server's arrival rate and latency bound
        (mlperf.conf's bound by default: 15 ms for resnet50).
      offline_expected_qps: Offline's expected samples/sec (sizes its one query).
      sample_count: samples in LoadGen's sample library (made once, before timing;
        default mlperf.conf's performance sample count, else 64).
    """
    import mlperf_loadgen as lg
    check_scenario(scenario, server_target_qps, server_latency_ms)
    settings, departures = _settings(lg, scenario, mlperf_model, quick, min_duration_s,
                                     min_query_count, server_target_qps, server_latency_ms)
    sample_count = _library_size(settings, sample_count, quick, departures)
    os.makedirs(log_dir, exist_ok=True)
    samples = make_samples(sample_count)
    _calibrated(settings, forward, samples, scenario, batch_size, offline_expected_qps)
    sut = SystemUnderTest(forward, samples, batch_size, lg)
    start(lg, sut, sample_count, settings, log_dir)
    summary = read_summary(os.path.join(log_dir, "mlperf_log_summary.txt"))
    figure = FIGURES[scenario]
    return ScenarioResult(scenario, summary.get("Result is") == "VALID", figure,
                          float(summary.get(figure, "nan")), summary, log_dir,
                          sut.answered, _reasons(log_dir), tuple(departures))


def start(lg, sut, sample_count, settings, log_dir):
    """One LoadGen test of `sut` over a library of `sample_count` samples, its logs in
    `log_dir`; LoadGen's objects destroyed whatever happens."""
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
    if sut.error is not None:
        raise RuntimeError(f"the model failed while LoadGen ran ({log_dir}): "
                           f"{type(sut.error).__name__}: {sut.error}") from sut.error


def _library_size(settings, sample_count, quick, departures):
    """The sample library's size; mlperf.conf's performance sample count unless given
    (a smaller library is a departure). LoadGen is then told the library's own size."""
    mlperf = int(settings.performance_sample_count_override)
    size = sample_count or (QUICK_LIBRARY if quick else mlperf or QUICK_LIBRARY)
    if mlperf and size < mlperf:
        departures.append(f"a sample library of {size} (MLPerf: {mlperf})")
    settings.performance_sample_count_override = 0
    return size


def _calibrated(settings, forward, samples, scenario, batch_size, offline_expected_qps):
    """The expected latency / QPS that size the queries LoadGen pre-makes, from the
    fastest forward pass: latency halved and QPS doubled, as LoadGen stops at the minimum
    duration anyway, while too few queries (a machine busier at calibration than in the
    run) end 'Min duration satisfied : NO'. Offline's one query must outlast the minimum
    duration (LoadGen's advice)."""
    count = _count(samples)
    per_query = settings.multi_stream_samples_per_query if scenario == "MultiStream" else 1
    seconds = _calibrate(forward, samples, min(batch_size, count) if scenario == "Offline"
                         else per_query)
    settings.offline_expected_qps = float(offline_expected_qps or
                                          2 * min(batch_size, count) / seconds)
    if scenario in ("SingleStream", "MultiStream"):
        setattr(settings, f"{scenario[:-6].lower()}_stream_expected_latency_ns",
                max(int(seconds * 1e9 / 2), 1))


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


def _settings(lg, scenario, mlperf_model, quick, min_duration_s, min_query_count,
              server_target_qps, server_latency_ms):
    """(LoadGen's TestSettings, departures from MLPerf's): mlperf.conf's settings for the
    model (LoadGen's own copy), then the minimum run and Server's bound asked for."""
    settings = lg.TestSettings()
    settings.scenario = getattr(lg.TestScenario, scenario)
    settings.FromConfig(os.devnull, mlperf_model or "mlbench", scenario, 0)  # 0: mlperf.conf
    settings.mode = lg.TestMode.PerformanceOnly
    mlperf_seconds, mlperf_queries = settings.min_duration_ms / 1000, settings.min_query_count
    seconds = min_duration_s or (QUICK_SECONDS if quick else mlperf_seconds)
    queries = min_query_count or (max(QUICK_QUERIES, EARLY_STOPPING_QUERIES.get(scenario, 1))
                                  if quick else mlperf_queries)
    departures = ["--quick"] if quick else []
    if seconds < mlperf_seconds:
        departures.append(f"a minimum duration of {seconds:g} s (MLPerf: {mlperf_seconds:g} s)")
    if queries < mlperf_queries:
        departures.append(f"a minimum of {queries} queries (MLPerf: {mlperf_queries})")
    settings.min_duration_ms, settings.min_query_count = int(seconds * 1000), int(queries)
    if scenario == "Server":
        settings.server_target_qps = float(server_target_qps)
        bound_ms = settings.server_target_latency_ns / 1e6
        if server_latency_ms:
            settings.server_target_latency_ns = int(server_latency_ms * 1e6)
            if mlperf_model and server_latency_ms > bound_ms:
                departures.append(f"a latency bound of {server_latency_ms:g} ms (MLPerf: "
                                  f"{bound_ms:g} ms)")
    if not mlperf_model:
        departures.append("no MLPerf Inference benchmark for this model (LoadGen's "
                          "settings every model shares)")
    return settings, departures


def _answer(forward, samples, indices):
    """The forward pass on the samples at `indices` (of each input, for a model of
    several), read back to the host."""
    import tensorflow as tf
    chosen = np.asarray(indices, np.int32)
    batch = tf.nest.map_structure(lambda t: tf.gather(t, chosen), samples)
    return tf.nest.map_structure(lambda t: t.numpy(), forward(batch))


def _count(samples):
    """Samples in a library: one tensor, or a dict of named inputs of one length."""
    import tensorflow as tf
    return int(tf.nest.flatten(samples)[0].shape[0])


class SystemUnderTest:
    """LoadGen's SUT: queries are queued by LoadGen's thread and answered by one worker
    (the model runs one batch at a time, as a single-stream device would). With
    `response`, each sample's answer carries `response(outputs)[i]` (a NumPy array per
    sample) for LoadGen's accuracy log."""

    def __init__(self, forward, samples, batch_size, lg, response=None):
        self.forward, self.samples, self.batch_size, self.lg = forward, samples, batch_size, lg
        self.response = response
        self.answered, self.error = 0, None
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
            for first in range(0, len(query), self.batch_size):
                part = query[first:first + self.batch_size]
                try:
                    answers = self._answers(part)
                except Exception as e:  # noqa: BLE001  (raised after LoadGen ends)
                    # LoadGen waits for every sample: answer them empty, and say why after
                    self.error = self.error or e
                    answers = [None] * len(part)
                self.lg.QuerySamplesComplete([
                    self.lg.QuerySampleResponse(s.id, 0, 0) if a is None else
                    self.lg.QuerySampleResponse(s.id, a.ctypes.data, a.nbytes)
                    for s, a in zip(part, answers)])  # LoadGen copies `answers` here
                self.answered += 0 if self.error else len(part)

    def _answers(self, part):
        """Each sample's answer for LoadGen (None: no data, the performance modes)."""
        outputs = _answer(self.forward, self.samples, [s.index for s in part])
        if self.response is None:
            return [None] * len(part)
        return [np.ascontiguousarray(a) for a in self.response(outputs)]


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
    lines = ["| scenario | LoadGen verdict | figure | value | settings |",
             "|---|---|---|---:|---|"]
    for r in results:
        value = f"{r.value / 1e6:.2f} ms" if "(ns)" in r.figure else f"{r.value:,.1f}"
        lines.append(f"| {r.scenario} | {'VALID' if r.valid else 'INVALID'} | "
                     f"{r.figure.replace(' (ns)', '')} | {value} | {r.settings} |")
    return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class Served:
    """What LoadGen's system under test runs: the forward pass, its samples and what they
    are.

    Attributes:
      forward: the model's forward pass (one `tf.function`).
      make_samples: `make_samples(n)` gives `n` samples as one batch on the device.
      policy: the precision the model runs in.
      samples: 'synthetic', or where the real samples come from.
      labels: the real samples' classes (a model_dir's eval set), else None.
      model: the built model.
    """
    forward: Any
    make_samples: Callable
    policy: str
    samples: str = "synthetic"
    labels: Optional[np.ndarray] = None
    model: Any = None


def model_forward(model, precision="auto", jit_compile=False, num_classes=1000,
                  seed=0) -> Served:
    """The system under test for a zoo name, a Keras model, a model_dir or a SavedModel,
    as `infer` builds them; a model_dir with an eval set answers on that eval set (real
    samples, cycled to fill a larger library). A model of several named inputs (BERT)
    gets a dict of them, each sample one row of every input."""
    import tensorflow as tf
    if isinstance(model, str) and os.path.exists(os.path.join(model, "run.json")):
        from mlbench.trainer.evaluation import eval_examples
        built, inputs, labels = eval_examples(
            model, None if precision == "auto" else precision, required=False)
        if inputs is not None:
            from mlbench import models
            forward = tf.function(lambda x: built(x, training=False),
                                  jit_compile=bool(jit_compile))
            return Served(forward, lambda n: tf.constant(inputs[np.arange(n) % len(inputs)]),
                          models.resolve(built).policy,
                          f"the run's eval set ({len(inputs)} samples)", labels, built)
    from mlbench.bench.infer import compiled_forward
    forward, source, policy = compiled_forward(model, precision, num_classes, jit_compile)
    # images: (images, labels); a model of several named inputs (BERT): a dict of them
    return Served(forward, lambda n: _inputs(source.replica_batch(n, seed)), policy)


def _inputs(batch):
    return batch if isinstance(batch, dict) else batch[0]


def default_log_dir(model_name, scenario):
    return os.path.join("runs", "loadgen", f"{model_name}_{scenario}")
