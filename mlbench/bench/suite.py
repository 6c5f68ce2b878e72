"""Suites: sweeps over models × device counts × data kinds, one gin file per page table."""
import os

import gin
import tensorflow as tf

from mlbench import config as gin_config
from mlbench.bench import report
from mlbench.bench.bench import benchmark
from mlbench.distribute import strategies
from mlbench.files import refuse_earlier_results
from mlbench.projector import attach, platforms, throughput
from mlbench.projector.page_suites import page_suite


def visible_devices():
    return len(tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("CPU"))


@gin.configurable("benchmark_suite")
def run_suite(name, models, device_counts=(1,), data_kinds=("synthetic",), batch_sizes=None,
              variable_updates=None, precision="auto", jit_compile="auto", data_dir=None,
              num_warmup_batches=10, num_batches=100, num_runs=5, reference=None,
              output_dir=None, project=None, project_platform=platforms.DEFAULT,
              verbose=True):
    """Runs every configuration that fits this machine and writes the report.

    Args:
      name: the suite's title (e.g. the page's table).
      models: model names, in the page's column order.
      device_counts: rows; counts above the visible devices are skipped and listed.
      data_kinds: 'synthetic' and/or 'real' (needs `data_dir`).
      batch_sizes: {model: per-device batch}; others use the page's default.
      variable_updates: {model: (variable_update, local_parameter_device)}.
      reference: the page's figures {kind: {devices: {model: images/sec}}} for the report.
      output_dir: where report.md, results.json and chart.png go.
      project: a device count: each model's smallest measured row is projected to 2 ... N
        devices over `project_platform`'s interconnect (a separate, labelled section).

    Returns:
      (results, paths of the written report files or None).
    """
    results, skipped = [], []
    # bad input refused before any benchmark runs
    refuse_earlier_results(output_dir, report.FILES, "output_dir")
    if project is not None:
        throughput.device_counts(project, min(device_counts))
        platforms.get(project_platform)
    strategies.split_cpu(max(device_counts))  # before TF starts: rows need the devices
    available = visible_devices()
    for kind in data_kinds:
        for n in device_counts:
            if n > available:
                skipped.append(f"{n} devices ({available} visible)")
                continue
            for model in models:
                update, device = (variable_updates or {}).get(model, (None, None))
                results.append(benchmark(
                    model, (batch_sizes or {}).get(model), n, update, device, data=kind,
                    data_dir=data_dir, precision=precision, jit_compile=jit_compile,
                    num_warmup_batches=num_warmup_batches, num_batches=num_batches,
                    num_runs=num_runs, verbose=verbose))
    if project is not None:
        base = min((r.num_devices for r in results), default=None)
        results = [attach.attach(r, project, project_platform, page_suite)[0]
                   if r.num_devices == base else r for r in results]
    sizes = {r.model: r.batch_size for r in results}
    settings = {"batch sizes (per device)": sizes,
                "optimizer": "sgd", "data": list(data_kinds), "data_dir": data_dir,
                "warm-up / timed steps / runs": f"{num_warmup_batches} / {num_batches} / {num_runs}",
                "precision (requested → ran)": f"{precision} → "
                                               f"{results[0].ran['precision'] if results else '-'}",
                "jit_compile (requested → ran)": f"{jit_compile} → "
                                                 f"{results[0].ran['jit_compile'] if results else '-'}"}
    paths = None
    if output_dir:
        paths = report.write(output_dir, name, results, list(models), list(device_counts),
                             list(data_kinds), settings, reference, sorted(set(skipped)))
    return results, paths


def planned_cells(name, data_dir=None):
    """The cells a suite file would run ({model, devices, data}), with its models and, for
    real data, `data_dir` checked: what `mlbench benchmark --suite=NAME --dry_run` shows."""
    from mlbench import models as models_lib
    from mlbench import page
    bindings = page.suite_bindings(name)  # a clear error for a name with no file
    kinds = bindings.get("data_kinds", ("synthetic",))
    data_dir = data_dir or bindings.get("data_dir")
    for model in bindings["models"]:
        models_lib.resolve(model)
    if "real" in kinds and not (data_dir and os.path.isdir(data_dir)):
        raise ValueError(f"`data_dir` ({data_dir!r}) must be a folder of ImageNet-format "
                         f"TFRecords: suite {name!r} times real data.")
    return [{"model": m, "devices": n, "data": kind} for kind in kinds
            for n in bindings.get("device_counts", (1,)) for m in bindings["models"]]


def run_named(name, gin_bindings=(), **overrides):
    """Runs the suite `gin/benchmarks/<name>.gin` (bindings on top, `overrides` last)."""
    with gin_config.scope([f"benchmarks/{name}.gin"], gin_bindings, reads=("benchmark_suite",)):
        return run_suite(**overrides)
