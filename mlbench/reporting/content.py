"""Sources → a Report of Sections of plain figures (`reporting.sections`). The HTML page
renders these and the JSON sidecar is these, so every figure shown is one in the sidecar.
"""
import datetime
import statistics

from mlbench import page
from mlbench.reporting import compare as compare_lib
from mlbench.reporting import curves
from mlbench.reporting.sections import Report, Section

METHOD = ("tf_cnn_benchmarks' method: warm-up steps (and the first step's trace or "
          "compile) are excluded; each run times its steps one by one; images/sec of a "
          "run = images of the timed steps ÷ their wall time (its 'total images/sec'); the "
          "± after a figure is the standard deviation across runs and jitter is 1.4826 × "
          "the median absolute deviation of per-step rates (tf_cnn_benchmarks' "
          "`get_perf_timing`).")
UNVERIFIED = ("Unverified: these results were not verified by MLCommons Association. "
              "MLPerf is a trademark of MLCommons; a result is an MLPerf result only "
              "after MLCommons' review.")
PUBLISHED = ("Published elsewhere, not measured here: the TensorFlow benchmarks page "
             "(2017, tf_cnn_benchmarks on NVIDIA GPUs), synthetic data, its own batch size.")


def number(value, text=None):
    if value is None:
        return "N/A"
    return {"value": value, "text": text if text is not None else fmt(value)}


def fmt(value):
    return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"


def build(loaded, published_figures=True, title=None):
    """All sections of a report over `loaded` sources (the first benchmark source is the
    baseline of any comparison); `published_figures` adds the benchmarks page's figures."""
    sections = [header(loaded, title)]
    for index, source in enumerate(loaded):
        prefix = f"s{index}"
        if source.kind in ("suite", "benchmark"):
            sections += benchmark_sections(source, prefix, published_figures)
        elif source.kind == "train":
            sections += train_sections(source, prefix)
        elif source.kind == "inference":
            sections += inference_sections(source, prefix)
        elif source.kind == "malformed":
            sections.append(Section(id=f"{prefix}-malformed", kind="facts",
                                    title=f"Malformed result: {source.path}",
                                    facts={"file": source.path,
                                           "problem": source.problem}))
        else:
            sections += mlperf_sections(source, prefix)
    sections += comparison_sections(loaded)
    return Report(title or "mlbench results", datetime.datetime.now(
        datetime.timezone.utc).isoformat(timespec="seconds"), sections)


def header(loaded, title):
    from mlbench.version import __version__
    facts = {"report": title or "mlbench results", "mlbench version": __version__}
    for source in loaded:
        for key, value in source.environment.items():
            facts.setdefault(key, value)
    if not any(s.environment for s in loaded):  # train runs do not record theirs
        from mlbench import machine
        facts.update({f"{k} (of the machine making this report)": v
                      for k, v in machine.environment().items()})
    facts["sources"] = "; ".join(f"{s.kind}: {s.path}" for s in loaded)
    return Section(id="environment", title="Environment", kind="facts", facts=facts)


# --- benchmarks ------------------------------------------------------------------------

def benchmark_sections(source, prefix, published_figures):
    results = source.results
    models = list(dict.fromkeys(r.model for r in results))
    devices = sorted({r.num_devices for r in results})
    kinds = list(dict.fromkeys(r.data for r in results))
    sections = [Section(id=f"{prefix}-title", title=source.title, kind="text",
                        text=f"{source.kind} in {source.path}"), method(source, prefix)]
    sections.append(throughput_chart(f"{prefix}-chart", results))
    for kind in kinds:
        sections.append(throughput_table(f"{prefix}-{kind}", results, kind, models, devices))
        if len(devices) > 1:
            sections.append(scaling_table(f"{prefix}-{kind}-scaling", results, kind, models,
                                          devices))
        sections.append(mfu_table(f"{prefix}-{kind}-mfu", results, kind, models, devices))
    if "synthetic" in kinds and len(kinds) > 1:
        sections.append(real_vs_synthetic(f"{prefix}-ratio", results, models, devices))
    sections += published(prefix, source, models, published_figures)
    sections += projections(prefix, results)
    sections.append(diagnosis_table(f"{prefix}-diagnosis", [
        ((r.model, str(r.num_devices), r.data), f) for r in results
        for f in r.diagnosis or ()], ["model", "devices", "data"]))
    return [s for s in sections if s]


def method(source, prefix):
    settings = source.record.settings if source.kind == "suite" else {}
    first = source.results[0]
    facts = {"warm-up / timed steps / runs": settings.get("warm-up / timed steps / runs") or
             f"{first.ran.get('num_warmup_batches', '?')} / "
             f"{first.runs[0].num_steps} / {len(first.runs)}",
             "statistics": METHOD}
    ran = first.ran
    for key in ("precision", "jit_compile", "strategy", "forward_only"):
        if key in ran:
            facts[key] = ran[key]
    return Section(id=f"{prefix}-method", title="Method", kind="facts", facts=facts)


def _cells(results, kind):
    return {(r.num_devices, r.model): r for r in results if r.data == kind}


def _grid(section_id, title, models, devices, cell_of, note=""):
    rows = [[str(n)] + [cell_of(n, m) for m in models] for n in devices]
    return Section(id=section_id, title=title, kind="table",
                   columns=["devices"] + [page.display(m) for m in models], rows=rows,
                   note=note)


def throughput_chart(section_id, results):
    series = {}
    for r in sorted(results, key=lambda r: r.num_devices):
        series.setdefault(f"{r.data}/{page.display(r.model)}", []).append(
            [r.num_devices, r.images_per_sec.mean])
    return Section(id=section_id, title="Images/sec by device count", kind="image",
                   series=series, xlabel="devices", ylabel="images/sec")


def throughput_table(section_id, results, kind, models, devices):
    cells = _cells(results, kind)

    def cell(n, m):
        r = cells.get((n, m))
        if r is None:
            return "N/A"
        mean, std = r.images_per_sec.mean, r.images_per_sec.std
        jitter = statistics.fmean(run.jitter for run in r.runs)
        return number(mean, f"{fmt(mean)} ± {fmt(std)} (jitter {fmt(jitter)})")
    return _grid(section_id, f"Training {kind} data: images/sec (mean of runs)", models,
                 devices, cell, "± standard deviation across runs; jitter as tf_cnn_benchmarks")


def scaling_table(section_id, results, kind, models, devices):
    cells, base = _cells(results, kind), devices[0]

    def cell(n, m):
        r, r0 = cells.get((n, m)), cells.get((base, m))
        if r is None or r0 is None:
            return "N/A"
        efficiency = r.images_per_sec.mean / (n / base * r0.images_per_sec.mean)
        return number(100 * efficiency, f"{100 * efficiency:.1f} %")
    return _grid(section_id, f"Scaling efficiency, {kind} data (vs {base} device"
                 f"{'s' if base > 1 else ''} × n)", models, devices, cell)


def mfu_table(section_id, results, kind, models, devices):
    cells = _cells(results, kind)
    sources_of_peak = sorted({r.peak_source or "" for r in cells.values()} - {""})

    def cell(n, m):
        r = cells.get((n, m))
        if r is None or r.mfu is None:
            return "N/A"
        return number(100 * r.mfu, f"{100 * r.mfu:.1f} %")
    return _grid(section_id, f"Model-FLOPs utilisation, {kind} data", models, devices, cell,
                 "peak: " + ("; ".join(sources_of_peak) or "n/a"))


def real_vs_synthetic(section_id, results, models, devices):
    synthetic = _cells(results, "synthetic")
    real = {k: v for kind in {r.data for r in results} - {"synthetic"}
            for k, v in _cells(results, kind).items()}

    def cell(n, m):
        s, r = synthetic.get((n, m)), real.get((n, m))
        if s is None or r is None:
            return "N/A"
        ratio = r.images_per_sec.mean / s.images_per_sec.mean
        return number(ratio, f"{ratio:.3f}")
    return _grid(section_id, "Real ÷ synthetic images/sec (input pipeline cost)", models,
                 devices, cell)


def published(prefix, source, models, anchors=True):
    """The page's figures: a page suite's own reference, else the page's 1-GPU rows of
    the models measured (the GPU anchors)."""
    reference = ((source.record.reference if source.kind == "suite" else None)
                 or {}).get("synthetic")
    if reference:
        devices = sorted(int(n) for n in reference)
        rows = {int(n): row for n, row in reference.items()}
        return [_grid(f"{prefix}-published", "The page's figures for this table (synthetic)",
                      models, devices, lambda n, m: number(rows[n].get(m)), PUBLISHED)]
    if not anchors:
        return []
    tables = {label: page.published(name).synthetic for name, label in page.anchor_suites()}
    on_page = [m for m in models if any(m in table.get(1, {}) for table in tables.values())]
    if not on_page:
        return []
    rows = [[label] + [number(table.get(1, {}).get(m)) for m in on_page]
            for label, table in tables.items()]
    return [Section(id=f"{prefix}-published", title="Published 1-GPU figures (GPU anchors)",
                    kind="table",
                    columns=["platform (1 GPU)"] + [page.display(m) for m in on_page],
                    rows=rows, note=PUBLISHED)]


def projections(prefix, results):
    projected = [r for r in results if r.projection]
    if not projected:
        return []
    rows = [[page.display(r.model), r.data, str(c.devices), number(c.images_per_sec),
             f"{fmt(c.low)}–{fmt(c.high)}", number(c.linear)]
            for r in projected for c in r.projection.cells]
    first = projected[0].projection
    return [Section(id=f"{prefix}-projection", kind="table", projection=True,
                    title=f"Projected, not measured: {first.platform}",
                    columns=["model", "data", "devices", "projected images/sec",
                             "band (no overlap – full overlap)", "linear scaling"],
                    rows=rows, note=first.label + " (docs/projection.md)."),
            *time_to_train_table(prefix, projected)]


def time_to_train_table(prefix, projected):
    """Minutes to the MLPerf target per projected cell whose global batch MLCommons'
    reference convergence points cover, as the producer stored them beside the
    projection; [] when none is stored."""
    rows, skipped = [], []
    for r in projected:
        skipped += [f"{r.model}: {reason}" for reason in r.projection.not_estimated]
        rows += [[page.display(r.model), str(t.devices), str(t.convergence.global_batch_size),
                  number(t.minutes, f"{t.minutes:.3g}"),
                  f"{t.minutes_low:.3g}–{t.minutes_high:.3g}",
                  f"{t.train_minutes:.3g} + {t.eval_minutes:.3g} ({t.evals} evals)",
                  t.convergence.source] for t in r.projection.time_to_train]
    if not rows:
        return []
    return [Section(id=f"{prefix}-time-to-train", kind="table", projection=True,
                    title="Time to train (projected, not measured): minutes to the MLPerf target",
                    columns=["model", "devices", "global batch", "minutes", "band (RCP)",
                             "training + evaluation", "samples to converge"], rows=rows,
                    note="A projection: samples to converge from MLCommons' reference "
                    "convergence points ÷ the projected images/sec, plus the closed "
                    "rules' evaluations at 3 × the training rate (stated); initialisation "
                    "and compilation excluded, as MLPerf's clock does (docs/projection.md)."
                    + (" No estimate for " + "; ".join(skipped) if skipped else ""))]


# --- training runs ---------------------------------------------------------------------

def train_sections(source, prefix):
    d = source.record
    facts = {"status": d.status, "steps": d.steps, "reached target": d.reached_target,
             "time to quality (s)": d.time_to_quality_s or d.time_to_quality_note,
             "examples/sec": d.examples_per_second,
             **{f"final {k}": v for k, v in d.final_metrics.items()},
             **{f"ran: {k}": v for k, v in d.ran.items()}}
    series = curves.read(source.path) or curves.from_history(d.history)
    # validation/loss is validation/eval_loss under the train loss's tag (TensorBoard overlays)
    shown = {k: v for k, v in series.items() if k == "train/loss" or
             k.startswith("validation/") and k != "validation/loss"}
    diagnosis = diagnosis_table(f"{prefix}-diagnosis",
                                [((), f) for f in d.diagnosis], [])
    return [Section(id=f"{prefix}-title", title=source.title, kind="text",
                    text=f"train run in {source.path}"),
            Section(id=f"{prefix}-facts", title="What ran", kind="facts", facts=facts),
            *([diagnosis] if diagnosis else []),
            Section(id=f"{prefix}-curves", title="Loss and metrics", kind="image",
                    series=shown, xlabel="step",
                    note="from the run's TensorBoard event files"
                    if series != curves.from_history(d.history)
                    else "from result.json's history")]


def inference_sections(source, prefix):
    """`mlbench infer`'s sweep: DeepLearningExamples' table, with its peak memory."""
    d = source.record
    facts = {"precision": d.precision, "XLA": d.jit_compile, "device": d.device,
             "inputs": d.inputs, "peak memory": d.memory or "not measured",
             **{f"batch {b} skipped": why for b, why in d.skipped.items()}}
    rows = [[str(r.batch_size), number(r.examples_per_sec, f"{r.examples_per_sec:.1f}"),
             *(number(v, f"{v:.2f}") for v in (r.mean_ms, r.p50_ms, r.p90_ms, r.p95_ms,
                                               r.p99_ms, r.max_ms)),
             str(r.batches), number(r.peak_memory_mb) if r.peak_memory_mb is not None
             else "-"] for r in d.rows]
    return [Section(id=f"{prefix}-title", title=source.title, kind="text",
                    text=f"inference sweep in {source.path}"),
            Section(id=f"{prefix}-facts", title="What ran", kind="facts", facts=facts),
            Section(id=f"{prefix}-latency", title="Latency and throughput per batch size",
                    kind="table", columns=["batch", "examples/sec", "mean ms", "p50 ms",
                                           "p90 ms", "p95 ms", "p99 ms", "max ms",
                                           "timed batches", "peak MiB"], rows=rows,
                    note="latency per batch from dispatch to outputs on the host; "
                         "nearest-rank percentiles; examples/sec = examples ÷ timed wall "
                         "time (docs/inference.md)")]


def diagnosis_table(section_id, rows, key_columns):
    """The findings of `mlbench.diagnosis` as a table; None when there are none.
    `rows`: (key cells, Finding) pairs."""
    if not rows:
        return None
    return Section(id=section_id, title="Diagnosis: what set the pace", kind="table",
                   columns=[*key_columns, "topic", "status", "verdict", "what was measured",
                            "what to change"],
                   rows=[[*key, f.topic, f.status, f.verdict, f.detail, f.advice or "-"]
                         for key, f in rows],
                   note="Each finding is read from measurements of the run (the input "
                   "pipeline timed alone, the step's traces, the loss scale, one device against "
                   "N); docs/why_slow.md explains them.")


# --- MLPerf run sets -------------------------------------------------------------------

def mlperf_sections(source, prefix):
    d = source.record
    rows = [[str(i), str(r.seed), r.status,
             number(r.minutes, "-" if r.minutes is None else f"{r.minutes:.3f}"),
             ", ".join(f"{k} {v:.4f}" for k, v in r.metrics.items()),
             "pass" if r.checker_passed else "FAIL"] for i, r in enumerate(d.runs)]
    return [Section(id=f"{prefix}-title", title=source.title, kind="text",
                    text=f"MLPerf run set in {source.path} ({d.division} division)"),
            Section(id=f"{prefix}-runs", title="Time to quality per run", kind="table",
                    columns=["run", "seed", "status", "minutes to target", "metrics",
                             "compliance checker"], rows=rows,
                    note=f"score: {d.score.label} (MLCommons' olympic average)"),
            Section(id=f"{prefix}-unverified", title="Status", kind="text",
                    text=UNVERIFIED)]


# --- comparisons -----------------------------------------------------------------------

def comparison_sections(loaded, threshold=None):
    benches = [s for s in loaded if s.kind in ("suite", "benchmark")]
    sections = []
    for i, candidate in enumerate(benches[1:], 1):
        result = compare_lib.compare(benches[0], candidate, threshold)
        rows = [[r.configuration[0], str(r.configuration[1]), r.configuration[2],
                 number(r.baseline), number(r.candidate), number(r.ratio, f"{r.ratio:.3f}"),
                 f"±{100 * r.noise:.1f} %", r.verdict] for r in result.rows]
        sections.append(Section(id=f"compare-{i}", kind="table",
                                title=f"Compared: {candidate.path} against {benches[0].path}",
                                columns=["model", "devices", "data", "baseline images/sec",
                                         "candidate images/sec", "ratio", "noise band",
                                         "verdict"], rows=rows,
                                note=compare_lib.__doc__.split("\n\n")[1].replace("\n", " ")))
    return sections
