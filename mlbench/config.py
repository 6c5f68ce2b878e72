"""Gin loading (search path, clear errors, isolation) and saving the operative config.

Each entry point registers its own configurables (`train` in `mlbench.plan`,
`mlperf` in `mlbench.mlperf.settings`, `benchmark_suite` in
`mlbench.bench.suite`); this module imports none of them, but keeps the one list
of those roots (`ROOTS`) and the one way to read a config (`scope`): a file may
hold several roots' sections, and an entry point checks only the roots it reads.
"""
import contextlib
import copy
import importlib
import importlib.util  # noqa: F401  gin's resource reader calls it without importing it
import inspect
import logging
import os
import sys

import gin
from gin import config as gin_internals

from mlbench.files import write_text

_PACKAGE = os.path.dirname(os.path.abspath(__file__))
# The gin roots of mlbench's entry points (an MLPerf file also holds `train.*`).
ROOTS = ("train", "mlperf", "benchmark_suite")
# Configurables read with a root: `optimizer_options.<key>` belongs to `train`.
_WITH_ROOT = {"train": ("optimizer_options",)}


def shipped_gin_root():
    """The gin files shipped with mlbench: `mlbench/gin` in an installed wheel (setup.py
    maps the repository's top-level `gin/` there), the repository's `gin/` in a checkout."""
    for candidate in (os.path.join(_PACKAGE, "gin"), os.path.join(os.path.dirname(_PACKAGE), "gin")):
        if os.path.isdir(candidate):
            return candidate
    raise FileNotFoundError(f"mlbench's gin files are missing (looked in {_PACKAGE}/gin and "
                            f"{os.path.dirname(_PACKAGE)}/gin); reinstall mlbench.")


# gin keeps its state in module globals and has no public snapshot: these are the ones
# parsing and calling configurables change.
_STATE = ("_CONFIG", "_OPERATIVE_CONFIG", "_IMPORTS", "_LOCATION_PREFIXES")


@contextlib.contextmanager
def isolated():
    """Parses inside run in a clean gin state; the caller's own config comes back after.

    A notebook user's bindings neither leak into an mlbench run nor get wiped by it.
    """
    saved = {name: copy.copy(getattr(gin_internals, name)) for name in _STATE}
    locked = gin_internals._CONFIG_IS_LOCKED
    gin_internals._CONFIG_IS_LOCKED = False
    gin.clear_config()
    try:
        yield
    finally:
        gin.clear_config()
        for name, value in saved.items():
            current = getattr(gin_internals, name)
            current.clear()
            (current.extend if isinstance(current, list) else current.update)(value)
        gin_internals._CONFIG_IS_LOCKED = locked


@contextlib.contextmanager
def scope(gin_files=(), gin_bindings=(), reads=("train",)):
    """An isolated gin state holding `gin_files` and `gin_bindings`, checked for the roots
    the entry point `reads` (the other roots' sections are left unchecked)."""
    unknown = sorted(set(reads) - set(ROOTS))
    if unknown:
        raise ValueError(f"gin root(s) {unknown} are not mlbench's; known: {list(ROOTS)}.")
    with isolated():
        skipped = [r for r in ROOTS if r not in reads]
        parse(gin_files, gin_bindings,
              skip_unknown=skipped + [n for r in skipped for n in _WITH_ROOT.get(r, ())])
        yield


def parse(gin_files=(), gin_bindings=(), skip_unknown=()):
    """Parses files and bindings into the current gin state.

    Files are searched as given, then among the shipped gin files, so
    `gin/cpu/mnist_cnn.gin` and `cpu/mnist_cnn.gin` both work; includes
    (written 'gin/<folder>/<file>.gin') resolve the same way.

    Args:
      skip_unknown: configurable names another entry point owns (left unchecked).

    Raises:
      ValueError: a missing file or an unknown/misspelled binding, naming it.
    """
    root = shipped_gin_root()
    # A bare 'mlperf/x.gin' include makes gin's system-path reader import `mlperf` as a
    # Python package; includes therefore say 'gin/...' and resolve from root's parent.
    gin.add_config_file_search_path(os.path.dirname(root))
    files = [resolve(path) for path in gin_files]
    try:
        with _quiet_include_search():
            gin.parse_config_files_and_bindings(files, list(gin_bindings),
                                                finalize_config=False,
                                                skip_unknown=list(skip_unknown) or False)
    except (ValueError, KeyError, SyntaxError, IOError) as e:
        raise ValueError(f"Invalid gin config (files {list(gin_files)}, bindings "
                         f"{list(gin_bindings)}): {e}") from e


class _IncludeSearchNoise(logging.Filter):
    """gin tries each include as a Python package path first and logs 'Path not found' at
    ERROR when that fails, which every 'gin/...' include does (`gin` is gin-config's own
    package), before it finds the file on the search path. A missing include still
    raises IOError, which `parse` reports naming it."""

    def filter(self, record):
        from_reader = record.pathname.endswith(os.path.join("gin", "resource_reader.py"))
        return not (from_reader and str(record.msg).startswith("Path not found"))


@contextlib.contextmanager
def _quiet_include_search():
    noise = _IncludeSearchNoise()
    logging.getLogger().addFilter(noise)  # gin logs through the root logger
    try:
        yield
    finally:
        logging.getLogger().removeFilter(noise)


def import_here(name):
    """Imports module `name` with the current directory searched first, as `python -m`
    searches it (the `mlbench` console script alone would not)."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    return importlib.import_module(name)


def import_user_module(name):
    """Imports a module of the user's (`--import=my_project.models`) and exposes its
    functions to gin, so a gin file can say `train.model = @my_project.models.small_cnn`.

    The current directory is searched first, as `python -m` does. Functions the module
    made gin-configurable itself are left as they are.
    """
    try:
        module = import_here(name)
    except ImportError as e:
        raise ValueError(f"`--import` ({name!r}): {e}; expected a module importable from "
                         f"the current directory or the Python path.") from e
    for attribute, value in vars(module).items():
        defined_here = inspect.isfunction(value) and value.__module__ == module.__name__
        if defined_here and not attribute.startswith("_") and not _is_configurable(value):
            gin.external_configurable(value, name=attribute, module=module.__name__)
    return module


def _is_configurable(function):
    selector = f"{function.__module__}.{function.__name__}"
    return gin_internals._REGISTRY.get_match(selector) is not None


def resolve(path):
    """`path` as given if it exists, else among the shipped gin files."""
    root = shipped_gin_root()
    relative = path[len("gin/"):] if path.startswith("gin/") else path
    for candidate in (path, os.path.join(root, relative)):
        if os.path.exists(candidate):
            return os.path.abspath(candidate)
    raise ValueError(f"`gin_file` ({path!r}) does not exist (searched as given and "
                     f"under {root}).")


def write(model_dir):
    """Writes the parsed config (before the run) to `model_dir/config.gin`."""
    text = gin.config_str()
    if model_dir and text.strip():
        write_text(os.path.join(model_dir, "config.gin"), text)


def write_operative(model_dir):
    """Writes the values gin actually used to `model_dir/operative_config.gin`."""
    if model_dir:
        write_text(os.path.join(model_dir, "operative_config.gin"), gin.operative_config_str())
