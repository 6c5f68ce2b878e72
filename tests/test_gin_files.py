"""Every gin file mlbench ships parses against the configurables it names."""
import glob
import os

import gin
import pytest

import mlbench.api  # noqa: F401  registers `train`
import mlbench.bench.suite  # noqa: F401  registers `benchmark_suite`
import mlbench.mlperf.settings  # noqa: F401  registers `mlperf`
from mlbench import config as gin_config
from conftest import REPO

GIN_FILES = sorted(os.path.relpath(p, os.path.join(REPO, "gin"))
                   for p in glob.glob(os.path.join(REPO, "gin", "**", "*.gin"), recursive=True))


def test_there_are_gin_files():
    assert len(GIN_FILES) >= 15 and "benchmarks/dgx1_p100.gin" in GIN_FILES


@pytest.mark.parametrize("name", GIN_FILES)
def test_gin_file_parses(name):
    with gin_config.isolated():
        gin_config.parse([name])  # no unknown configurable or parameter is skipped
        assert gin.config_str() or gin.config._CONFIG
