"""Reports in the benchmarks page's layout: Markdown tables, JSON, a PNG chart."""
import os

from mlbench import page, reporting
from mlbench.results import files as result_files
from mlbench.results.records import SuiteResults
from mlbench.files import write_text



def _name(model):
    return page.display(model)


def _fmt(value):
    if value is None:
        return "N/A"
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def table(results, data_kind, models, device_counts, key=lambda r: r.images_per_sec.mean):
    """Rows = device count, columns = models; one cell per configuration."""
    cells = {(r.num_devices, r.model): key(r) for r in results if r.data == data_kind}
    lines = ["| devices | " + " | ".join(_name(m) for m in models) + " |",
             "|---" * (len(models) + 1) + "|"]
    for n in device_counts:
        lines.append(f"| {n} | " + " | ".join(_fmt(cells.get((n, m))) for m in models) + " |")
    return "\n".join(lines)


def reference_table(reference, data_kind, models):
    rows = reference.get(data_kind, {})
    lines = ["| devices | " + " | ".join(_name(m) for m in models) + " |",
             "|---" * (len(models) + 1) + "|"]
    for n in sorted(rows):
        lines.append(f"| {n} | " + " | ".join(_fmt(rows[n].get(m)) for m in models) + " |")
    return "\n".join(lines)


def projected_section(results):
    """The projector's cells, apart from the measurements and labelled as projections."""
    projected = [r for r in results if r.projection]
    if not projected:
        return []
    first = projected[0].projection
    lines = [f"## Projected, not measured ({first.platform})", "",
             f"{first.label}. Point estimate [no overlap – full overlap of communication "
             "with the backward pass]; linear scaling for comparison "
             "(docs/projection.md).", "",
             "| model | data | devices | projected images/sec | band | linear |",
             "|---|---|---|---|---|---|"]
    for r in projected:
        for c in r.projection.cells:
            lines.append(f"| {_name(r.model)} | {r.data} | {c.devices} | "
                         f"{_fmt(c.images_per_sec)} | {_fmt(c.low)}–{_fmt(c.high)} | "
                         f"{_fmt(c.linear)} |")
    return lines + [""]


def environment_block(env, settings):
    items = {**env, **settings}
    return "\n".join(f"- {k}: {v}" for k, v in items.items())


def markdown(title, results, models, device_counts, data_kinds, settings, reference=None,
             skipped=()):
    """The whole report: environment, one table per data kind (+ MFU), the page's figures."""
    env = results[0].environment if results else {}
    parts = [f"# {title}", "", "## Environment", "", environment_block(env, settings), ""]
    for kind in data_kinds:
        parts += [f"## Training {kind} data (images/sec, mean of runs)", "",
                  table(results, kind, models, device_counts), ""]
        parts += [f"Model-FLOPs utilisation, {kind} data (peak: "
                  f"{results[0].peak_source if results else 'n/a'})", "",
                  table(results, kind, models, device_counts,
                        key=lambda r: None if r.mfu is None else 100 * r.mfu), ""]
        if reference and reference.get(kind):
            parts += [f"Page's figures ({kind}):", "", reference_table(reference, kind, models), ""]
    parts += projected_section(results)
    if skipped:
        parts += ["Not run: " + "; ".join(skipped), ""]
    return "\n".join(parts)


def chart(results, models, path):
    """images/sec vs device count per model; synthetic solid, real dashed."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for model in models:
        for kind, style in (("synthetic", "-o"), ("real", "--s")):
            points = sorted((r.num_devices, r.images_per_sec.mean) for r in results
                            if r.model == model and r.data == kind)
            if points:
                ax.plot(*zip(*points), style, label=f"{_name(model)} ({kind})")
    ax.set_xlabel("devices")
    ax.set_ylabel("images/sec")
    ax.set_title("Training throughput")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


FILES = ("report.md", "results.json", "chart.png")  # what `write` puts in output_dir


def write(output_dir, title, results, models, device_counts, data_kinds, settings,
          reference=None, skipped=()):
    """Writes report.md, results.json, chart.png and the HTML page (report.html with its
    JSON sidecar) to `output_dir`; returns their paths."""
    os.makedirs(output_dir, exist_ok=True)
    paths = {k: os.path.join(output_dir, f) for k, f in
             zip(("markdown", "json", "png"), FILES)}
    write_text(paths["markdown"], markdown(title, results, models, device_counts, data_kinds,
                                           settings, reference, skipped))
    result_files.write(output_dir, SuiteResults(
        title=title, settings=settings, skipped=list(skipped), reference=reference,
        results=list(results)), indent=1)
    paths["html"], paths["html_figures"] = reporting.report(
        [output_dir], os.path.join(output_dir, "report.html"), title)
    try:
        chart(results, models, paths["png"])
    except ImportError:  # matplotlib is the optional extra mlbench[reports]
        print("no chart: matplotlib is not installed (pip install 'mlbench[reports]').")
        paths.pop("png")
    return paths
