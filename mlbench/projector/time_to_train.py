"""Minutes and dollars to a quality target: samples to converge ÷ throughput + evaluation.

    minutes = samples to converge / images_per_sec  +  evals × eval set / eval rate

- **Samples to converge** come from MLCommons' reference convergence points (RCPs: many
  seeds of one configuration per global batch size), read and interpolated by
  `rcp_checker` itself (`RCP_Checker._create_interp_rcp`: linear in the batch size
  between the two nearest pruned RCPs). The band is the range of olympic means
  rcp_checker's t-test accepts around the reference mean: from its 'Min Epochs' (the
  fastest allowed) to the mirrored bound above the mean (`mlbench.mlperf.rcp`).
- **Throughput** is measured (a benchmark result) or projected to N devices
  (`mlbench.projector.throughput`).
- **Evaluation** follows the closed rules' cadence and eval set (the `closed_eval` of
  the benchmark's record in `mlperf.benchmarks`), at a forward-only rate: measured with
  `benchmark(forward_only=True)` when given, else the training rate × FORWARD_SPEEDUP (a stated ratio: a forward pass is about a third of
  a training step's FLOPs).
- **Initialisation and compilation** are outside MLPerf's timed window (run_start comes
  after them); they are listed apart, not added.
"""
import dataclasses
import math
from typing import Optional

from mlbench.mlperf import benchmarks
from mlbench.mlperf import rcp as rcp_lib
from mlbench.results.projection import Convergence, TimeToTrain

FORWARD_SPEEDUP = 3.0  # training FLOPs ≈ 3 × forward (Kaplan et al. 2020): stated, not measured
DEFAULT_RULESET = "1.0.0"


def convergence(benchmark, global_batch_size, ruleset=DEFAULT_RULESET, rcp_path=None,
                train_examples=None):
    """Samples to converge for `benchmark` at `global_batch_size`, from MLCommons' RCPs
    for `ruleset` or the custom RCP file `rcp_path` (e.g. mlbench's CPU-scale ones).

    `train_examples` turns epochs into samples where the RCPs count epochs (default: the
    benchmark's own train set, ImageNet's for ResNet).
    Raises ValueError for a batch size outside the RCPs' range, naming the range.
    """
    record = benchmarks.get(benchmark)
    checker = rcp_lib.checker_for(benchmark, ruleset, rcp_path)
    reference, source = _reference(checker, global_batch_size, rcp_path or ruleset)
    mean, low = float(reference["RCP Mean"]), float(reference["Min Epochs"])
    high = 2 * mean - low  # the mirrored bound (mlbench.mlperf.rcp.judge_epochs)
    in_epochs = record.epoch_examples is not None
    per = float(train_examples or record.epoch_examples) if in_epochs else 1.0
    return Convergence(benchmark, global_batch_size, ruleset, mean * per, low * per,
                       high * per, mean if in_epochs else None, source,
                       rcp_path or f"MLCommons rcps_{benchmark}.json, training {ruleset}")


def _reference(checker, batch, where):
    """rcp_checker's record for `batch`: its own, or its interpolation of the two nearest
    RCPs, both from the pruned set (`rcp_checker.check_directory` with its default
    `--rcp_pass=pruned_rcps`, as a submission is judged: an RCP that converged slower
    than its neighbours' interpolation is pruned)."""
    found = checker._find_rcp(batch, "pruned_rcps")
    if found is not None:
        return found, f"RCP at batch {batch}"
    low = checker._find_top_min_rcp(batch, "pruned_rcps")
    high = checker._find_bottom_max_rcp(batch, "pruned_rcps")
    if low is None or high is None:
        sizes = sorted(r["BS"] for r in checker._get_rcp_data("pruned_rcps").values())
        raise ValueError(f"`global_batch_size` ({batch}) is outside the RCPs of {where} "
                         f"(batch sizes {sizes[0]} to {sizes[-1]}: {sizes}); rcp_checker "
                         "interpolates only between two of them.")
    _, record = checker._create_interp_rcp(batch, low, high)
    return record, f"interpolated between RCPs at batch {low['BS']} and {high['BS']}"


def estimate(converge, images_per_sec, devices=1, eval_images_per_sec=None,
             price_per_device_hour=None, price_source="given", cadence=None,
             train_examples=None):
    """TimeToTrain of `converge` at a training rate of `images_per_sec` on `devices`.

    Args:
      converge: a Convergence.
      images_per_sec: training throughput over all devices (measured or projected).
      eval_images_per_sec: forward-only throughput; default images_per_sec ×
        FORWARD_SPEEDUP (stated in the result).
      price_per_device_hour: dollars per device-hour; the cost is that × devices × hours.
      cadence: the eval cadence (default: the closed rules' for the benchmark).
      train_examples: the train set's size (ResNet's epoch; default ImageNet's).
    """
    if not images_per_sec or images_per_sec <= 0:
        raise ValueError(f"`images_per_sec` ({images_per_sec!r}) must be a positive rate.")
    record = benchmarks.get(converge.benchmark)
    cadence = cadence or record.closed_eval
    if eval_images_per_sec:
        eval_rate, how = eval_images_per_sec, "forward-only rate measured"
    else:
        eval_rate, how = images_per_sec * FORWARD_SPEEDUP, \
            f"forward rate = training rate x {FORWARD_SPEEDUP:g} (stated, not measured)"
    every = cadence.every_samples(converge.global_batch_size,
                                  train_examples or record.epoch_examples)

    def minutes(samples):
        evals = math.ceil(samples / every - 1e-9)
        return (samples / images_per_sec + evals * cadence.eval_examples / eval_rate) / 60, evals
    point, evals = minutes(converge.samples)
    low, high = minutes(converge.samples_low)[0], minutes(converge.samples_high)[0]
    train_minutes = converge.samples / images_per_sec / 60
    result = TimeToTrain(converge, devices, images_per_sec, eval_rate, how, evals,
                         train_minutes, point - train_minutes, point, low, high)
    if price_per_device_hour is not None:
        hourly = price_per_device_hour * devices / 60
        result = dataclasses.replace(
            result, price_per_device_hour=price_per_device_hour, price_source=price_source,
            cost=point * hourly, cost_low=low * hourly, cost_high=high * hourly)
    return result


def benchmark_of(model, benchmark=None):
    """The MLPerf benchmark whose RCPs apply to `model` ('resnet' or 'bert')."""
    found = benchmark or benchmarks.of_model(model)
    if found not in benchmarks.BENCHMARKS:
        raise ValueError(f"model {model!r} has no MLPerf benchmark to take convergence from; "
                         f"give `benchmark` ({sorted(benchmarks.BENCHMARKS)}).")
    return found


def for_projection(projection, *, benchmark=None, gradient_accumulation_steps=1,
                   global_batch_size=None, ruleset=DEFAULT_RULESET, rcp_path=None,
                   train_examples=None, eval_images_per_sec=None, price_per_device_hour=None,
                   price_source="given", cadence=None):
    """(a TimeToTrain per cell of a `Projection` and its measured base, [why a device
    count has none]): each row's devices × per-device batch × accumulation is its global
    batch, unless given; a global batch outside the RCPs gets no estimate (the reason
    says so), and when no row has one the first reason is raised."""
    name = benchmark_of(projection.model, benchmark)
    rows = [(projection.base_devices, projection.images_per_sec)] + [
        (c.devices, c.images_per_sec) for c in projection.cells]
    estimates, skipped = [], []
    for devices, rate in rows:
        batch = global_batch_size or (projection.batch_size * devices *
                                      gradient_accumulation_steps)
        try:
            converge = convergence(name, batch, ruleset, rcp_path, train_examples)
        except ValueError as e:
            skipped.append(f"{devices} device(s): {e}")
            continue
        # a measured forward rate scales with the devices as the training rate does
        forward = (eval_images_per_sec * rate / projection.images_per_sec
                   if eval_images_per_sec else None)
        estimates.append(estimate(converge, rate, devices, forward, price_per_device_hour,
                                  price_source, cadence, train_examples))
    if not estimates:
        raise ValueError(skipped[0].split(": ", 1)[1])
    return estimates, skipped


def _cadence(benchmark, every_epochs, eval_examples):
    """The closed rules' eval cadence, with the parts given replaced."""
    closed = benchmarks.get(benchmark).closed_eval
    if every_epochs is None and eval_examples is None:
        return closed
    return benchmarks.EvalCadence(eval_examples or closed.eval_examples,
                       every_epochs=every_epochs or closed.every_epochs,
                       bert_formula=closed.bert_formula and every_epochs is None)


@dataclasses.dataclass
class ProjectedRun:
    """What `project` returns: the projected throughput, how it was calibrated (if it
    was), and with `to_quality` the time (and cost) to train per device count."""
    projection: object
    calibration: Optional[object] = None
    time_to_train: Optional[list] = None
    not_estimated: Optional[list] = None  # device counts whose global batch no RCP covers

    def text(self):
        from mlbench.projector import throughput
        lines = [throughput.table_of(self.projection)]
        if self.calibration is not None:
            c = self.calibration
            lines.append(f"calibrated on 1 and 2 devices ({c.images_per_sec_1:.1f} and "
                         f"{c.images_per_sec_2:.1f} images/sec): 2-device efficiency "
                         f"{c.derate:.3f} of the datasheet's projection; effective "
                         f"{c.link} {c.effective_bandwidth / 1e9:.3g} GB/s ({c.bound})")
        lines += [t.line() for t in self.time_to_train or ()]
        lines += [f"no time to train for {reason}" for reason in self.not_estimated or ()]
        return "\n".join(lines)

    def to_dict(self):
        return {"projection": self.projection.to_dict(),
                "calibration": self.calibration.to_dict() if self.calibration else None,
                "time_to_train": [t.to_dict() for t in self.time_to_train or ()] or None,
                "not_estimated": self.not_estimated}


def project(result=None, *, devices=(2, 4, 8), platform=None, to_quality=False,
            calibrate=None, calibration_mode="derate", benchmark=None,
            gradient_accumulation_steps=1, global_batch_size=None, ruleset=DEFAULT_RULESET,
            rcp_path=None, train_examples=None, forward_result=None,
            price_per_device_hour=None, eval_every_epochs=None, eval_examples=None,
            **measurement):
    """Images/sec on `devices` from one measured device, and with `to_quality` the
    minutes (and dollars) to the MLPerf quality target.

    Args:
      result: a BenchmarkResult or its result.json (or give `model`, `images_per_sec`,
        `batch_size` by hand in `measurement`).
      devices / platform: the projector's (`mlbench.projector.throughput.project_throughput`); the
        platform defaults to `platforms.DEFAULT`, as everywhere.
      to_quality: add `time_to_train` per device count: samples to converge (MLCommons'
        RCPs for `ruleset`, or the custom `rcp_path`) ÷ throughput + the closed rules'
        evaluations, with the RCP's band.
      calibrate: (1-device result, 2-device result) of your own: project from them
        (`mlbench.projector.calibration`, `calibration_mode` 'derate' or 'bandwidth').
      benchmark: 'resnet' or 'bert' (default: from the model).
      gradient_accumulation_steps / global_batch_size: the global batch is per-device
        batch × devices × accumulation unless given.
      train_examples: ResNet's epoch in images (default ImageNet's 1,281,167).
      forward_result: a `benchmark(forward_only=True)` result of the same device: the
        eval rate (default: training rate × FORWARD_SPEEDUP, stated).
      price_per_device_hour: dollars; default the platform record's price, if it has one.
      eval_every_epochs / eval_examples: an eval cadence of your own (e.g. a CPU-scale
        config's) instead of the closed rules' for the benchmark.
    """
    from mlbench.projector import calibration as calibration_lib
    from mlbench.projector import page_suites
    from mlbench.projector import platforms
    from mlbench.projector import throughput as projection_lib
    platform = platforms.DEFAULT if platform is None else platform
    calibrated = None
    if calibrate is not None:
        one, two = calibrate
        calibrated = calibration_lib.from_results(one, two, platform)
        projected = projection_lib.Projection(
            calibrated.model, calibrated.platform + " (calibrated)", calibrated.pattern,
            calibrated.batch_size, 1, calibrated.images_per_sec_1, calibrated.gradient_bytes,
            calibrated.project(list(devices), calibration_mode))
    else:
        projected = projection_lib.project_throughput(
            result, devices=list(devices), platform=platform,
            read_suite=page_suites.page_suite, **measurement)
    run = ProjectedRun(projected, calibrated)
    if to_quality:
        price, source = price_per_device_hour, "given"
        if price is None and not isinstance(platform, dict):
            price, source = platforms.get(platform).get("price_per_device_hour") or (None, None)
        forward = (projection_lib._measurement(forward_result)["images_per_sec"]
                   if forward_result is not None else None)
        run.time_to_train, run.not_estimated = for_projection(
            projected, benchmark=benchmark, gradient_accumulation_steps=gradient_accumulation_steps,
            global_batch_size=global_batch_size, ruleset=ruleset, rcp_path=rcp_path,
            train_examples=train_examples, eval_images_per_sec=forward,
            price_per_device_hour=price, price_source=source,
            cadence=_cadence(benchmark_of(projected.model, benchmark), eval_every_epochs,
                             eval_examples))
    return run


def estimates_or_reasons(projection, benchmark=None):
    """`for_projection` that never raises: ([TimeToTrain], [why a device count has none]);
    ([], [reason]) for a model without an MLPerf benchmark or a batch outside its RCPs."""
    try:
        return for_projection(projection, benchmark=benchmark)
    except ValueError as e:
        return [], [str(e)]
