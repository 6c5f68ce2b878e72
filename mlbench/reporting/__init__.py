"""Results people can look at and compare: a self-contained HTML page and `compare`.

`sources` reads what runs wrote (suite results.json, a benchmark's result.json, a
train run's result.json and TensorBoard events, an MLPerf run set's results.json);
`content` turns sources into sections of plain figures (the JSON sidecar);
`html` renders those sections offline; `compare` judges a candidate against a
baseline from the runs' own spread. Nothing here runs a model.
"""
import os

from mlbench.files import write_json, write_text
from mlbench.reporting import content, html, sources
from mlbench.results import codec


def report(paths, output="report.html", title=None, published_figures=True):
    """Writes one self-contained HTML page (and `<output>.json`, every figure shown) over
    the run directories `paths`; returns (html path, json path).

    Args:
      paths: directories (or their results.json / result.json) of benchmark suites,
        single benchmarks, train runs and MLPerf run sets; with several benchmark sources
        the later ones are compared against the first. A malformed result file is shown
        as such (the file and its first bad field), not read.
      output: the HTML file.
      published_figures: add the TensorFlow benchmarks page's figures for the models
        measured (its 1-GPU rows, or a page suite's own table).
    """
    if isinstance(paths, str):
        paths = [paths]
    loaded = sources.load_all(paths, keep_malformed=True)
    built = content.build(loaded, published_figures, title)
    sidecar = os.path.splitext(output)[0] + ".json"
    if os.path.dirname(output):
        os.makedirs(os.path.dirname(output), exist_ok=True)
    write_text(output, html.page(built))
    write_json(sidecar, codec.encode(built), indent=1)
    return output, sidecar
