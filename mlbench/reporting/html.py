"""Sections → one self-contained HTML page: inline CSS, charts as embedded PNG (data:
URIs), no script, no external request."""
import base64
import html
import io
import json

CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:70em;color:#222}
h1{font-size:1.6em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.6em 0}td,th{border:1px solid #bbb;padding:.25em .6em}
th{background:#eee}td.num{text-align:right;font-variant-numeric:tabular-nums}
dl{display:grid;grid-template-columns:max-content auto;gap:.15em 1em}dt{font-weight:600}
dd{margin:0}.note{color:#555;font-size:.9em}
section.projection{border:2px dashed #b60;padding:0 1em;background:#fff8ef}
section.projection h2::before{content:"PROJECTION — ";color:#b60}
""".strip()


def page(report):
    """The HTML text of a Report built by `content.build`."""
    body = [f"<h1>{_e(report.title)}</h1>",
            f"<p class=note>made {_e(report.made)} by mlbench; every figure is also in "
            "the JSON sidecar.</p>"]
    body += [_section(s) for s in report.sections]
    return ("<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
            f"<title>{_e(report.title)}</title><style>{CSS}</style></head>"
            "<body>\n" + "\n".join(body) + "\n</body></html>\n")


def _e(value):
    return html.escape(str(value), quote=True)


def _section(section):
    classes = "projection" if section.projection else section.kind
    inner = {"facts": _facts, "table": _table, "text": _text, "image": _image}[
        section.kind](section)
    note = f"<p class=note>{_e(section.note)}</p>" if section.note else ""
    return (f"<section id=\"{_e(section.id)}\" class=\"{classes}\">"
            f"<h2>{_e(section.title)}</h2>{inner}{note}</section>")


def _facts(section):
    return "<dl>" + "".join(f"<dt>{_e(k)}</dt>{_fact(v)}"
                            for k, v in section.facts.items()) + "</dl>"


def _fact(value):
    """Floats shown to 4 significant digits, the exact value kept in data-value."""
    if isinstance(value, float):
        return f"<dd data-value=\"{_e(repr(value))}\">{value:.4g}</dd>"
    if isinstance(value, (dict, list)):
        value = json.dumps(value, ensure_ascii=False)
    return f"<dd>{_e(value)}</dd>"


def _text(section):
    return f"<p>{_e(section.text)}</p>"


def _table(section):
    head = "".join(f"<th>{_e(c)}</th>" for c in section.columns)
    rows = "".join("<tr>" + "".join(_cell(c) for c in row) + "</tr>" for row in section.rows)
    return (f"<table id=\"{_e(section.id)}-table\"><thead><tr>{head}</tr></thead>"
            f"<tbody>{rows}</tbody></table>")


def _cell(cell):
    if isinstance(cell, dict):
        return (f"<td class=num data-value=\"{_e(repr(float(cell['value'])))}\">"
                f"{_e(cell['text'])}</td>")
    return f"<td>{_e(cell)}</td>"


def _image(section):
    series = section.series or {}
    if not series:
        return "<p>no curves: the run wrote no events or history.</p>"
    try:
        png = curves_png(series, section.xlabel, section.ylabel)
    except ImportError:  # matplotlib is the optional extra mlbench[reports]
        return "<p>no chart: matplotlib is not installed (pip install 'mlbench[reports]').</p>"
    return (f"<img alt=\"{_e(', '.join(series))}\" src=\"data:image/png;base64,"
            f"{base64.b64encode(png).decode()}\">")


def curves_png(series, xlabel, ylabel=""):
    """One panel per series name's prefix (train, validation; or a data kind), a line per
    name after it."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = sorted({name.split("/")[0] for name in series})
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.4), squeeze=False)
    for ax, panel in zip(axes[0], panels):
        for name, points in series.items():
            if name.startswith(panel + "/") and points:
                ax.plot(*zip(*points), marker="o" if len(points) < 10 else None,
                        label=name.split("/", 1)[1])
        ax.set_title(panel)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    plt.close(fig)
    return buffer.getvalue()
