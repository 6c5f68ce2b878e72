"""Gin: one scope per entry point, checked for the roots it reads, isolated from the user's."""
import gin
import pytest

import mlbench.trainer.api  # noqa: F401  registers `train`
import mlbench.mlperf.settings  # noqa: F401  registers `mlperf`
from mlbench import config, plan
from mlbench.plan.arguments import train_defaults


def test_an_mlperf_file_read_as_training_checks_train_only():
    with config.scope(["mlperf/cpu/resnet_digits.gin"], reads=("train",)):
        assert gin.query_parameter("train.model") == "resnet_tiny"
    with config.scope(["mlperf/cpu/resnet_digits.gin"], ["train.train_stepz = 3"],
                      reads=("train",)):
        # `train` takes any binding; the plan names the one that is no argument of train
        with pytest.raises(ValueError, match=r"\['train.train_stepz'\] name no argument"):
            plan.train_arguments({}, train_defaults())
    with pytest.raises(ValueError, match="divisionz"):
        with config.scope(["mlperf/cpu/resnet_digits.gin"], ["mlperf.divisionz = 'open'"],
                          reads=("mlperf", "train")):
            pass


def test_the_users_own_gin_state_comes_back():
    @gin.configurable("users_own")
    def users_own(value=0):
        return value
    gin.bind_parameter("users_own.value", 7)
    with config.scope(["cpu/mnist_cnn.gin"], reads=("train",)):
        with pytest.raises(ValueError):
            gin.query_parameter("users_own.value")
    assert users_own() == 7


def test_unknown_root_and_missing_file_are_named():
    with pytest.raises(ValueError, match=r"\['trian'\]"):
        with config.scope([], reads=("trian",)):
            pass
    with pytest.raises(ValueError, match=r"`gin_file` \('cpu/nope.gin'\)"):
        with config.scope(["cpu/nope.gin"]):
            pass


def test_includes_resolve_without_an_error_line_and_a_missing_one_is_named(
        caplog, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # away from the checkout, as a user's notebook is
    with caplog.at_level("INFO"):
        with config.scope(["mlperf/cpu/resnet_digits.gin"], reads=("mlperf", "train")):
            assert gin.query_parameter("train.model") == "resnet_tiny"
    assert not [r for r in caplog.records if r.levelname == "ERROR"], caplog.text
    broken = tmp_path / "broken.gin"
    broken.write_text("include 'gin/mlperf/nope.gin'\n")
    with pytest.raises(ValueError, match=r"nope\.gin"):
        with config.scope([str(broken)]):
            pass
