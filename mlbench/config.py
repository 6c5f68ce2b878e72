"""Gin loading (search path, clear errors) and saving the operative config."""
import os

import gin

GIN_ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "gin")


def parse(gin_files=(), gin_bindings=()):
    """Clears any earlier config, then parses files and bindings.

    Files are searched as given, then under the repository's `gin/` folder, so
    `gin/cpu/mnist_cnn.gin` and `cpu/mnist_cnn.gin` both work; includes resolve
    the same way.

    Raises:
      ValueError: a missing file or an unknown/misspelled binding, naming it.
    """
    _register_configurables()
    gin.clear_config()
    # Includes are written 'gin/<folder>/<file>.gin' and found under the repository root.
    # (A bare 'mlperf/x.gin' makes gin's system-path reader import `mlperf` as a Python
    # package, and it crashes on namespace packages such as tests/mlperf.)
    gin.add_config_file_search_path(os.path.dirname(GIN_ROOT))
    files = [resolve(path) for path in gin_files]
    try:
        gin.parse_config_files_and_bindings(files, list(gin_bindings),
                                            finalize_config=False)
    except (ValueError, KeyError, SyntaxError, IOError) as e:
        raise ValueError(f"Invalid gin config (files {list(gin_files)}, bindings "
                         f"{list(gin_bindings)}): {e}") from e


def _register_configurables():
    """Imports every module with gin configurables, so any gin file parses anywhere."""
    import mlbench.api  # noqa: F401  (train)
    import mlbench.benchmark.suite  # noqa: F401  (benchmark_suite)
    import mlbench.mlperf.run  # noqa: F401  (mlperf)


def resolve(path):
    """`path` as given if it exists, else under `gin/` (gin's own lookup fails on these)."""
    for candidate in (path, os.path.join(GIN_ROOT, path)):
        if os.path.exists(candidate):
            return os.path.abspath(candidate)
    raise ValueError(f"`gin_file` ({path!r}) does not exist (searched as given and "
                     f"under {GIN_ROOT}).")


def write(model_dir):
    """Writes the parsed config (before the run) to `model_dir/config.gin`."""
    text = gin.config_str()
    if model_dir and text.strip():
        with open(os.path.join(model_dir, "config.gin"), "w") as f:
            f.write(text)


def write_operative(model_dir):
    """Writes the values gin actually used to `model_dir/operative_config.gin`."""
    if model_dir:
        with open(os.path.join(model_dir, "operative_config.gin"), "w") as f:
            f.write(gin.operative_config_str())
