"""The benchmarks page's tables, read from the page suites' gin files (golden data for the
projector and the published figures of reports).

Read with gin's own parser rather than by binding them: binding needs the
`benchmark_suite` configurable, which lives with the suite runner (TensorFlow and
every model), and reading figures must not need either. The page suites hold
literals and includes only.
"""
import os

from gin import config_parser

from mlbench import config as gin_config
from mlbench.bench import defaults, projection


class _LiteralsOnly(config_parser.ParserDelegate):
    def configurable_reference(self, scoped_configurable_name, evaluate):
        raise ValueError(f"page suites hold literals only, not @{scoped_configurable_name}.")

    def macro(self, macro_name):
        raise ValueError(f"page suites hold literals only, not %{macro_name}.")


def suite_bindings(name):
    """{parameter: value} of `benchmark_suite` in gin/benchmarks/<name>.gin (includes
    first, later bindings win, as gin does)."""
    path = os.path.join(gin_config.shipped_gin_root(), "benchmarks", f"{name}.gin")
    if not os.path.exists(path):
        raise ValueError(f"`suite` ({name!r}) is not a file under gin/benchmarks/.")
    return _bindings(path)


def _bindings(path):
    values = {}
    with open(path) as f:
        for statement in config_parser.ConfigParser(f, _LiteralsOnly()):
            if isinstance(statement, config_parser.IncludeStatement):
                included = statement.filename.split("gin/", 1)[-1]
                values.update(_bindings(os.path.join(gin_config.shipped_gin_root(), included)))
            elif (isinstance(statement, config_parser.BindingStatement)
                  and statement.selector == "benchmark_suite"):
                values[statement.arg_name] = statement.value
    return values


def page_suite(name):
    """(batch sizes, {model: pattern}, synthetic {n: {model: images/sec}}, base devices)
    of a page suite, read from its gin file."""
    bindings = suite_bindings(name)
    sizes, reference = bindings["batch_sizes"], bindings["reference"]["synthetic"]
    updates = bindings.get("variable_updates") or {}
    patterns = {m: projection.pattern_for(*(updates.get(m) or defaults.variable_update(m)))
                for m in reference[min(reference)]}
    base = 8 if name.startswith("ec2_distributed") else 1
    return sizes, patterns, reference, base
