"""The command line in a real subprocess: exit codes and files on disk."""
import json
import os
import subprocess
import sys

from conftest import REPO

ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "mlbench", *args], cwd=REPO, env=ENV,
                          capture_output=True, text=True, timeout=600)


def test_train_command_runs_gin_and_writes_run_dir(tmp_path):
    out = run_cli("train", "--gin_file=gin/cpu/mnist_cnn.gin",
                  "--gin_bindings=train.train_epochs=0.5", "--gin_bindings=train.target=None",
                  f"--model_dir={tmp_path / 'run'}")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "RESULT" in out.stdout
    for name in ("operative_config.gin", "result.json", "checkpoints"):
        assert (tmp_path / "run" / name).exists()


def test_bad_binding_exits_non_zero_and_names_it(tmp_path):
    out = run_cli("train", "--gin_file=gin/cpu/mnist_cnn.gin", "--gin_bindings=train.modle='x'",
                  f"--model_dir={tmp_path / 'run'}")
    assert out.returncode == 2
    assert "modle" in out.stderr
    assert not (tmp_path / "run").exists()


def test_data_imagenet_command_writes_readable_shards(tmp_path):
    out = run_cli("data", "imagenet", "--source=digits", "--image_size=16",
                  f"--output_dir={tmp_path}")
    assert out.returncode == 0, out.stderr[-2000:]
    names = sorted(os.listdir(tmp_path))
    assert "train-00000-of-00002" in names and "validation-00000-of-00001" in names
    assert int(open(tmp_path / "train-00000-of-00002.count").read()) == 719


def test_data_without_kind_is_refused(tmp_path):
    out = run_cli("data", f"--output_dir={tmp_path}")
    assert out.returncode == 2 and "imagenet" in out.stderr


def test_benchmark_command_distributed_replicated_in_one_process(tmp_path):
    """distributed_replicated → MultiWorkerMirroredStrategy (one local worker without TF_CONFIG)."""
    out = run_cli("benchmark", "--model=resnet_tiny", "--batch_size=8",
                  "--variable_update=distributed_replicated", "--num_batches=2",
                  "--num_warmup_batches=1", "--num_runs=1", f"--output_dir={tmp_path}")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "total images/sec" in out.stdout
    saved = json.load(open(tmp_path / "result.json"))
    assert saved["ran"]["strategy"] == "MultiWorkerMirroredStrategy"
    assert saved["runs"][0]["num_steps"] == 2


def test_benchmark_command_too_many_devices_names_flag():
    out = run_cli("benchmark", "--model=resnet_tiny", "--num_gpus=0")
    assert out.returncode == 2 and "`num_gpus` (0)" in out.stderr
