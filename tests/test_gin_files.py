"""Every gin file mlbench ships parses against the configurables it names."""
import glob
import os
import re

import gin
import pytest

import mlbench.trainer.api  # noqa: F401  registers `train`
import mlbench.bench.suite  # noqa: F401  registers `benchmark_suite`
import mlbench.mlperf.settings  # noqa: F401  registers `mlperf`
from mlbench import config as gin_config
from mlbench import plan as plan_lib
from mlbench.plan.arguments import train_defaults
from conftest import REPO

GIN_FILES = sorted(os.path.relpath(p, os.path.join(REPO, "gin"))
                   for p in glob.glob(os.path.join(REPO, "gin", "**", "*.gin"), recursive=True))


def test_there_are_gin_files():
    assert len(GIN_FILES) >= 15 and "benchmarks/dgx1_p100.gin" in GIN_FILES


@pytest.mark.parametrize("name", GIN_FILES)
def test_gin_file_parses(name):
    with gin_config.isolated():
        gin_config.parse([name])  # no unknown configurable or parameter is skipped
        for key in bound_keys(name):  # every binding the file writes is in force
            gin.query_parameter(key)


def bound_keys(name):
    """`configurable.parameter` (scoped or not) of each binding written in a gin file."""
    with open(os.path.join(REPO, "gin", name)) as f:
        return re.findall(r"^([\w/]+\.[\w.]+)\s*=", f.read(), re.MULTILINE)


def test_one_binding_changes_one_optimizer_option():
    """resnet_digits.gin includes the closed ResNet file and binds `warmup_steps` alone; an
    explicit option wins for its key and keeps the file's others."""
    closed = {"schedule": "polynomial", "power": 2.0, "end_learning_rate": 1e-4,
              "momentum": 0.9, "weight_decay": 5e-5}
    with gin_config.scope(["mlperf/cpu/resnet_digits.gin"], reads=("mlperf", "train")):
        from_file = plan_lib.train_arguments({}, train_defaults()).optimizer_options
        explicit = plan_lib.train_arguments({"optimizer_options": {"momentum": 0.8}},
                                            train_defaults()).optimizer_options
    assert from_file == dict(closed, warmup_steps=22)
    assert explicit == dict(closed, warmup_steps=22, momentum=0.8)
