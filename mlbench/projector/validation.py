"""The projector against the page: each page suite projected from its own base row, the
error summary beside linear scaling, and the validation gates (docs/projection.md)."""
from mlbench import page
from mlbench.page import CALIBRATION_MODEL
from mlbench.projector import platforms
from mlbench.projector.throughput import PARAMETERS, format_table, page_etas, project_cell


def project_page(name, read_suite):
    """Every cell of a page suite projected from its own base row: {model: [Cell]}."""
    if name not in page.SUITES:
        raise ValueError(f"`suite` ({name!r}) is not a benchmarks-page suite; known: "
                         f"{sorted(page.SUITES)}.")
    sizes, patterns, reference, base = read_suite(name)
    platform = page.SUITES[name].platform
    record, etas = platforms.get(platform), page_etas(platform, read_suite)
    cells = {}
    for model, pattern in patterns.items():
        cells[model] = [
            project_cell(reference[base][model], sizes[model], n, pattern,
                         4 * PARAMETERS[model], record, etas.get(n, 1.0), base,
                         measured=reference[n].get(model))
            for n in sorted(reference) if n > base and model in reference[n]]
    return cells


def summary(cells, exclude=(CALIBRATION_MODEL,)):
    """Mean absolute % error, cells within 5 % / 10 %, in band, worst — projection and
    linear scaling side by side — over the cells of models not in `exclude`."""
    held = [(m, c) for m, row in cells.items() if m not in exclude for c in row
            if c.measured is not None]
    if not held:
        return {}

    def figures(errors):
        absolute = [abs(e) for e in errors]
        return {"mape": 100 * sum(absolute) / len(absolute),
                "within_5": sum(a <= 0.05 for a in absolute),
                "within_10": sum(a <= 0.10 for a in absolute)}
    worst_model, worst = max(held, key=lambda mc: abs(mc[1].error))
    return {"cells": len(held), "projection": figures([c.error for _, c in held]),
            "linear": figures([c.linear_error for _, c in held]),
            "in_band": sum(c.in_band() for _, c in held),
            "worst": {"model": worst_model, "devices": worst.devices,
                      "error_pct": 100 * worst.error}}


def format_summary(figures, what):
    if not figures:
        return f"{what}: no held-out cells"
    p, lin = figures["projection"], figures["linear"]
    worst = figures["worst"]
    return (f"{what}: {figures['cells']} held-out cells (all but {CALIBRATION_MODEL}) — "
            f"projection MAPE {p['mape']:.2f} %, {p['within_5']} within 5 %, "
            f"{p['within_10']} within 10 %, {figures['in_band']} measured inside the band "
            f"(±3 %); linear scaling MAPE {lin['mape']:.2f} %, {lin['within_5']} within 5 %, "
            f"{lin['within_10']} within 10 %; worst {worst['model']} at {worst['devices']} "
            f"devices ({worst['error_pct']:+.1f} %)")


def page_report(name, read_suite):
    """(text, JSON-able figures) of `mlbench project --suite=<name> --from=page`."""
    cells = project_page(name, read_suite)
    figures = summary(cells)
    text = format_table(cells, name, with_measured=True) + "\n" + format_summary(figures, name)
    return text, {"suite": name, "label": "projection (not measured)", "summary": figures,
                  "cells": {m: [dict(vars(c), error=c.error) for c in row]
                            for m, row in cells.items()}}


SINGLE_HOST_GATE_SUITES = tuple(s.name for s in page.SUITES.values() if s.single_host_gate)


def validate_page(read_suite):
    """The page's validation: the 57 single-host synthetic cells (45 held out) and the
    distributed table's 16/32/64 cells, each with the summary beside linear scaling."""
    single = {f"{s}/{m}": row for s in SINGLE_HOST_GATE_SUITES
              for m, row in project_page(s, read_suite).items()}
    distributed = project_page("ec2_distributed", read_suite)
    held = [k for k in single if k.endswith(CALIBRATION_MODEL)]
    return {"single_host": single, "single_host_summary": summary(single, exclude=held),
            "distributed": distributed,
            "distributed_summary": summary(distributed)}


def validation_report(read_suite):
    """(text, JSON-able summaries) of `mlbench project --validate`."""
    figures = validate_page(read_suite)
    single, distributed = figures["single_host_summary"], figures["distributed_summary"]
    text = "\n".join([
        format_summary(single, "single host (" + ", ".join(SINGLE_HOST_GATE_SUITES) + ")"),
        format_summary(distributed, "distributed (ec2_distributed, 16/32/64 GPUs)")])
    return text, {"label": "projection (not measured)", "single_host": single,
                  "distributed": distributed}
