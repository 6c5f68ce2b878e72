"""Input-bound or compute-bound: the input pipeline timed alone, beside the step's rate.

tf_cnn_benchmarks' way of asking the question: synthetic data removes the input
pipeline and sets the step's own rate; real data shows whether the pipeline keeps
the devices fed. Here the pipeline is also timed alone (files → decode → augment →
batch, on the host's cores, no model), so the verdict rests on three measured rates.
"""
import dataclasses
import math
import os
import time

from mlbench.diagnosis.findings import Finding

MAX_BATCHES = 24  # timed batches at most: a bounded cost before a train run
MAX_SECONDS = 10.0  # ... or this much time, whichever comes first
WARMUP_BATCHES = 3  # fill the prefetch buffer and let tf.data's autotuner settle
HEADROOM = 1.2  # a pipeline less than 20 % faster than the step has no slack for a hiccup
CAPPED = 1.15  # a run within 15 % of the pipeline's rate is held by the pipeline
SHARED = 0.9  # a fast-enough pipeline yet a run under 90 % of synthetic: they contend


def time_pipeline(dataset, examples_per_batch, max_batches=MAX_BATCHES,
                  max_seconds=MAX_SECONDS, clock=time.perf_counter):
    """Examples/sec of `dataset` read alone (no model): {'examples_per_second', 'batches',
    'seconds'}.

    The rate is the slope over the later batches: the first ones after the warm-up come
    out of the prefetch buffer filled while nothing was reading, and would flatter it.
    """
    iterator = iter(dataset)
    for _ in range(WARMUP_BATCHES):
        next(iterator)
    stamps = [clock()]
    while len(stamps) <= max_batches and (len(stamps) < 5 or
                                          stamps[-1] - stamps[0] < max_seconds):
        next(iterator)
        stamps.append(clock())
    first = len(stamps) // 4
    seconds = stamps[-1] - stamps[first]
    batches = len(stamps) - 1 - first
    return {"examples_per_second": batches * examples_per_batch / seconds,
            "batches": batches, "seconds": seconds}


def finding(pipeline_rate, ran_rate, step_rate=None, replicas=1, host_cores=None,
            published_rates=None):
    """The input finding from the pipeline's rate alone, the rate that ran, and (when
    measured) the step's rate on synthetic data of the same shape; all examples/sec
    over every replica. `published_rates` ({platform: one device's images/sec for this
    model}) adds how many such devices this host's pipeline could feed."""
    found = _finding(pipeline_rate, ran_rate, step_rate, replicas,
                     host_cores or os.cpu_count())
    if published_rates:
        fed = {name: math.floor(pipeline_rate / rate) for name, rate in published_rates.items()}
        found = dataclasses.replace(
            found, figures=dict(found.figures, devices_fed_on_published_platforms=fed),
            detail=found.detail + " On published platforms this host's pipeline could feed: "
            + ", ".join(f"{n} x {name} ({published_rates[name]:.0f} images/sec each)"
                        for name, n in fed.items()) + ".")
    return found


def _finding(pipeline_rate, ran_rate, step_rate, replicas, host_cores):
    figures = {"pipeline_examples_per_second": pipeline_rate,
               "ran_examples_per_second": ran_rate,
               "synthetic_examples_per_second": step_rate, "replicas": replicas,
               "host_cores": host_cores}
    if step_rate is None:
        return _without_step_rate(figures)
    figures["pipeline_over_step"] = pipeline_rate / step_rate
    figures["ran_over_synthetic"] = ran_rate / step_rate if ran_rate else None
    per_device = step_rate / replicas
    figures["devices_fed"] = math.floor(pipeline_rate / per_device)
    figures["cores_needed"] = math.ceil(host_cores * step_rate / pipeline_rate)
    rates = (f"the pipeline alone gives {pipeline_rate:.1f} examples/sec, the step on "
             f"synthetic data takes {step_rate:.1f}, the run gave {ran_rate:.1f} "
             f"({figures['ran_over_synthetic']:.0%} of synthetic)")
    if pipeline_rate < step_rate:
        return Finding(
            "input", "problem", "input-bound",
            f"{rates}: the pipeline runs at {pipeline_rate / step_rate:.0%} of the step's "
            f"rate, so the devices wait for data.", figures,
            _feeding_advice(figures, replicas))
    if pipeline_rate < HEADROOM * step_rate:
        return Finding("input", "warning", "barely fed",
                       f"{rates}: the pipeline is only {pipeline_rate / step_rate:.2f}x the "
                       "step's rate, with little slack for a slow batch.", figures,
                       _feeding_advice(figures, replicas))
    fed = figures["devices_fed"]
    faster = (f"the pipeline is {pipeline_rate / step_rate:.1f}x faster than the step; it "
              f"could feed {fed} device{'s' if fed != 1 else ''} like these")
    if ran_rate and ran_rate < SHARED * step_rate:
        return Finding("input", "warning", "pipeline and step contend",
                       f"{rates}: {faster}, yet together they ran at "
                       f"{figures['ran_over_synthetic']:.0%} of the step alone, so they "
                       "compete for the host (its cores, memory bandwidth, copies to the "
                       "devices).", figures,
                       "On CPU devices both run on the same cores: cap the pipeline's "
                       "threads (tf.data threading.private_threadpool_size) or move its "
                       "work off the host (tf.data service, cached decoded data).")
    return Finding("input", "ok", "compute-bound", f"{rates}: {faster}.", figures)


def _without_step_rate(figures):
    pipeline_rate, ran_rate = figures["pipeline_examples_per_second"], \
        figures["ran_examples_per_second"]
    if not ran_rate:
        return Finding("input", "ok", "pipeline timed",
                       f"the pipeline alone gives {pipeline_rate:.1f} examples/sec.", figures)
    figures["pipeline_over_ran"] = pipeline_rate / ran_rate
    rates = (f"the pipeline alone gives {pipeline_rate:.1f} examples/sec and the run "
             f"{ran_rate:.1f}")
    if pipeline_rate <= CAPPED * ran_rate:
        return Finding(
            "input", "warning", "held by the input pipeline",
            f"{rates}: the run is at {ran_rate / pipeline_rate:.0%} of what the pipeline "
            "can give, so the pipeline caps it.",
            figures, "Time the step on synthetic data (`mlbench benchmark --diagnose` with "
            "this model and data) to learn how much faster the devices could go; "
            + _PIPELINE_FIXES)
    return Finding("input", "ok", "compute-bound",
                   f"{rates}: the pipeline is {pipeline_rate / ran_rate:.1f}x faster than "
                   "the run, so the step sets the pace.", figures)


_PIPELINE_FIXES = ("map with num_parallel_calls=tf.data.AUTOTUNE, cache() decoded data "
                   "that fits in memory, and keep prefetch at the end.")


def _feeding_advice(figures, replicas):
    return (f"To keep {replicas} device{'s' if replicas > 1 else ''} at the step's rate "
            f"this pipeline needs about {figures['cores_needed']} host cores (this host has "
            f"{figures['host_cores']}), if its work runs in parallel: " + _PIPELINE_FIXES)


def on_device(step_rate):
    """The input finding of synthetic data: there is no pipeline to wait for."""
    return Finding("input", "ok", "compute-bound",
                   f"the data is synthetic, made on the devices: no input pipeline; the step "
                   f"alone ran at {step_rate:.1f} examples/sec." if step_rate else
                   "the data is synthetic, made on the devices: no input pipeline.",
                   {"synthetic_examples_per_second": step_rate})
