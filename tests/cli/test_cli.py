"""The command line in a real subprocess: help texts, exit codes, files on disk, packaging."""
import json
import os
import subprocess
import sys
import zipfile

import pytest

from conftest import REPO
from harness import mlbench_here, mlbench_process

ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
COMMANDS = ("train", "benchmark", "mlperf", "project", "report", "compare", "data", "launch")


def run_cli(*args, cwd=REPO, timeout=600, env=None):
    return mlbench_process(*args, cwd=cwd, timeout=timeout, env=env)


def test_top_level_help_lists_every_command():
    out = run_cli("--help")
    assert out.returncode == 0, out.stderr[-2000:]
    for command in COMMANDS:
        assert f"    {command} " in out.stdout
    assert "3 target not reached" in out.stdout


def test_each_command_has_its_own_help():
    train = mlbench_here("train", "--help")
    assert train.returncode == 0
    for flag in ("--model", "--data", "--global_batch_size", "--train_steps", "--target",
                 "--precision", "--strategy", "--xla_compile", "--num_gpus", "--resume"):
        assert flag in train.stdout
    assert "--display_every" not in train.stdout  # benchmark's name: one meaning per name
    assert "--num_batches" not in train.stdout  # benchmark's flag, not train's
    bench = mlbench_here("benchmark", "--help")
    assert bench.returncode == 0 and "--num_batches" in bench.stdout
    assert "--global_batch_size" not in bench.stdout


@pytest.mark.parametrize("command,codes", [
    ("train", "3 target not reached"), ("compare", "1 a regression beyond the threshold"),
    ("launch", "124 --launch_timeout_s reached"), ("report", "exit codes: 0 ok, 1 failed, 2 "
                                                           "bad usage or bad input")])
def test_each_command_lists_its_own_exit_codes(command, codes):
    out = mlbench_here(command, "--help")
    assert out.returncode == 0 and codes in " ".join(out.stdout.split())
    # exit code 3 belongs to the commands that run to a target (launch starts them)
    runs_to_target = command in ("train", "mlperf", "launch")
    assert ("3 target not reached" in " ".join(out.stdout.split())) is runs_to_target


def test_a_flag_the_command_does_not_take_is_refused():
    out = mlbench_here("mlperf", "--gin_file=mlperf/cpu/resnet_digits.gin", "--model_dir=x")
    assert out.returncode == 2 and "--model_dir" in out.stderr


def test_main_job_from_a_directory_without_runs(tmp_path):
    """`make run` from a fresh clone: runs/ does not exist; parents are created."""
    as_a_user = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    out = run_cli("train", "--gin_file=gin/cpu/mnist_cnn.gin", "--model_dir=runs/mnist_cnn",
                  cwd=str(tmp_path), env=as_a_user)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "reached_target=True" in out.stdout
    assert "cuInit" not in out.stderr and "Sharding callback" not in out.stderr
    for name in ("operative_config.gin", "result.json", "checkpoints", "train", "validation"):
        assert (tmp_path / "runs" / "mnist_cnn" / name).exists()


def test_train_by_flags_only_and_target_exit_codes(tmp_path):
    common = ["train", "--model=simple_cnn", "--data=digits", "--global_batch_size=32",
              "--train_steps=4", "--eval_every=2", "--model_options=image_size=8",
              "--precision=float32", "--noverbose"]
    reached = run_cli(*common, "--target=top1=0.0", f"--model_dir={tmp_path / 'a'}")
    assert reached.returncode == 0, reached.stderr[-2000:]
    saved = json.loads((tmp_path / "a" / "result.json").read_text())
    assert saved["steps"] == 2 and saved["arguments"]["model"] == "simple_cnn"  # stopped at target
    assert reached.stdout == ""  # --noverbose: nothing printed
    missed = run_cli(*common, "--target=top1=1.0", f"--model_dir={tmp_path / 'b'}")
    assert missed.returncode == 3
    assert json.loads((tmp_path / "b" / "result.json").read_text())["steps"] == 4


def test_explicit_flags_win_over_gin(tmp_path):
    out = run_cli("train", "--gin_file=gin/cpu/mnist_cnn.gin", "--train_steps=3",
                  "--gin_bindings=train.train_epochs=None", "--gin_bindings=train.target=None",
                  "--eval_every=3", "--gin_bindings=train.eval_every_epochs=None",
                       f"--model_dir={tmp_path / 'run'}")
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads((tmp_path / "run" / "result.json").read_text())["steps"] == 3


def test_bad_binding_exits_2_and_names_it(tmp_path):
    out = mlbench_here("train", "--gin_file=gin/cpu/mnist_cnn.gin",
                       "--gin_bindings=train.modle='x'",
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
    out = mlbench_here("data", f"--output_dir={tmp_path}")
    assert out.returncode == 2 and "imagenet" in out.stderr


def test_benchmark_command_distributed_replicated_in_one_process(tmp_path):
    """distributed_replicated → MultiWorkerMirroredStrategy (one local worker without TF_CONFIG)."""
    out = run_cli("benchmark", "--model=resnet_tiny", "--batch_size=8",
                  "--variable_update=distributed_replicated", "--num_batches=2",
                  "--num_warmup_batches=1", "--num_runs=1", f"--output_dir={tmp_path}",
                  "--project=8", "--project_platform=dgx1_v100")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "total images/sec" in out.stdout
    saved = json.load(open(tmp_path / "result.json"))
    assert saved["ran"]["strategy"] == "MultiWorkerMirroredStrategy"
    assert saved["runs"][0]["num_steps"] == 2
    # the projected column: this run's figure scaled over the V100 box's interconnect
    from mlbench.projector import throughput as projection
    again = projection.project_throughput(str(tmp_path / "result.json"), devices=(2, 4, 8),
                               platform="dgx1_v100")
    shown = saved["projection"]
    assert shown["label"].startswith("projection (not measured)")
    assert shown["pattern"] == "distributed_replicated" and shown["platform"] == "dgx1_v100"
    assert [c["devices"] for c in shown["cells"]] == [2, 4, 8]
    assert [c["images_per_sec"] for c in shown["cells"]] == pytest.approx(
        [c.images_per_sec for c in again.cells], rel=1e-12)
    assert "projected images/sec on dgx1_v100" in out.stdout
    # run again into the same folder: exit 2 before any step, the first result kept
    first = open(tmp_path / "result.json", "rb").read()
    rerun = run_cli("benchmark", "--model=resnet_tiny", "--num_batches=2", "--num_runs=1",
                    f"--output_dir={tmp_path}")
    assert rerun.returncode == 2 and "already holds result.json" in rerun.stderr
    assert "images/sec" not in rerun.stdout
    assert open(tmp_path / "result.json", "rb").read() == first


def test_benchmark_command_bad_device_count_names_flag():
    out = mlbench_here("benchmark", "--model=resnet_tiny", "--num_gpus=0")
    assert out.returncode == 2 and "`num_devices` (--num_gpus) (0)" in out.stderr
    for flags, needle in ((["--project=1"], "`project` (1)"),
                          (["--project=8", "--project_platform=dgx9"], "`platform` ('dgx9')")):
        refused = mlbench_here("benchmark", "--model=resnet_tiny", *flags)
        assert refused.returncode == 2 and needle in refused.stderr, refused.stderr[-800:]


def test_launch_reports_a_missed_target_as_such(tmp_path):
    out = run_cli("launch", "--num_workers=1", "--", "train", "--model=simple_cnn",
                  "--data=digits", "--global_batch_size=32", "--train_steps=2",
                  "--model_options=image_size=8", "--target=top1=1.0", "--noverbose",
                       f"--model_dir={tmp_path / 'run'}")
    assert out.returncode == 3
    assert "did not reach its target" in out.stderr and "failed" not in out.stderr


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                            "--no-build-isolation", "-q", "-w", str(out), REPO],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-2000:]
    return next(out.glob("mlbench-*.whl"))


def test_wheel_carries_the_gin_files_and_finds_them_from_anywhere(wheel, tmp_path):
    names = zipfile.ZipFile(wheel).namelist()
    for path in ("mlbench/gin/cpu/mnist_cnn.gin", "mlbench/gin/mlperf/cpu/resnet_digits.gin",
                 "mlbench/gin/benchmarks/dgx1_p100.gin"):
        assert path in names
    site = tmp_path / "site"
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q",
                                "--target", str(site), str(wheel)],
                               capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stderr[-2000:]
    code = ("from mlbench import config\n"
            "print(config.resolve('mlperf/cpu/resnet_digits.gin'))\n"
            "with config.scope(['mlperf/cpu/resnet_digits.gin'], reads=()):\n"
            "    pass\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = subprocess.run([sys.executable, "-c", code], cwd=str(elsewhere), capture_output=True,
                         text=True, timeout=120, env={**ENV, "PYTHONPATH": str(site)})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == str(site / "mlbench" / "gin" / "mlperf" / "cpu" /
                                     "resnet_digits.gin")


def test_diverged_run_exits_1_and_says_so(tmp_path):
    out = run_cli("train", "--gin_file=gin/cpu/mnist_cnn.gin", "--learning_rate=1e30",
                  "--precision=float32", "--noverbose", f"--model_dir={tmp_path / 'run'}")
    assert out.returncode == 1, out.stderr[-2000:]
    assert "diverged" in out.stderr and "not finite" in out.stderr


OWN_MODULE = '''
import tf_keras as keras


def small_cnn():
    inputs = keras.Input((8, 8, 1))
    x = keras.layers.Flatten()(keras.layers.Conv2D(8, 3, activation="relu")(inputs))
    return keras.Model(inputs, keras.layers.Dense(10)(x))
'''
OWN_JOB = '''# your own model from your own module: mlbench train --import=my_models --gin_file=job.gin
train.model = @my_models.small_cnn
train.data = 'digits'
train.global_batch_size = 32
train.train_steps = 4
train.precision = 'float32'
'''


def test_gin_job_names_a_function_of_your_own_module(tmp_path):
    (tmp_path / "my_models.py").write_text(OWN_MODULE)
    (tmp_path / "job.gin").write_text(OWN_JOB)
    out = run_cli("train", "--import=my_models", "--gin_file=job.gin", "--model_dir=run",
                  cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    saved = json.loads((tmp_path / "run" / "result.json").read_text())
    assert saved["steps"] == 4 and set(saved["final_metrics"]) == {"accuracy", "eval_loss"}
    assert "@my_models.small_cnn" in (tmp_path / "run" / "operative_config.gin").read_text()
    bench = run_cli("benchmark", "--import=my_models", "--model=small_cnn_registered",
                    "--num_batches=1", "--num_runs=1", cwd=tmp_path)
    assert bench.returncode == 2 and "'small_cnn_registered'" in bench.stderr
    misspelled = run_cli("train", "--import=my_modles", "--gin_file=job.gin", cwd=tmp_path)
    assert misspelled.returncode == 2
    assert "`--import` ('my_modles')" in misspelled.stderr
    assert not (tmp_path / "runs").exists()


def test_benchmark_flags_come_from_its_signature_under_tf_cnn_benchmarks_names():
    """--num_gpus/--all_reduce_spec/--xla_compile reach num_devices/all_reduce/jit_compile;
    flags not given keep benchmark()'s own defaults (nothing passed for them)."""
    import inspect
    from mlbench import cli
    from mlbench.bench.bench import benchmark
    args = cli.build_parser().parse_args(
        ["benchmark", "--model=resnet_tiny", "--num_gpus=2", "--all_reduce_spec=nccl",
         "--noxla_compile", "--num_batches=7", "--forward_only"])
    assert cli.common.given_arguments(args, benchmark) == {
        "model": "resnet_tiny", "num_devices": 2, "all_reduce": "nccl", "jit_compile": False,
        "num_batches": 7, "forward_only": True}
    flags = {a.dest for a in cli.build_parser()._subparsers._group_actions[0]
             .choices["benchmark"]._actions}
    assert set(inspect.signature(benchmark).parameters) - {"clock", "verbose"} <= flags


KERAS3_MODULE = '''
import keras


def small_cnn():
    return keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Conv2D(8, 3, activation="relu"),
                             keras.layers.Flatten(), keras.layers.Dense(10)])


def stop_early():
    # min_delta=100: no eval improves on the first, so patience=1 stops at the second
    return [keras.callbacks.EarlyStopping(monitor="val_loss", patience=1, min_delta=100)]
'''
KERAS3_JOB = '''# a Keras 3 model and callbacks from your module: mlbench train --import=my_k3 ...
train.model = @my_k3.small_cnn
train.callbacks = @my_k3.stop_early()
train.data = 'digits'
train.global_batch_size = 32
train.train_steps = 40
train.eval_every = 4
train.target = {'accuracy': 0.999}
train.precision = 'float32'
'''


def test_gin_job_trains_a_keras_3_model_with_callbacks_and_a_stop_exits_3(tmp_path):
    (tmp_path / "my_k3.py").write_text(KERAS3_MODULE)
    (tmp_path / "job.gin").write_text(KERAS3_JOB)
    args = ("train", "--import=my_k3", "--gin_file=job.gin", "--model_dir=run")
    out = run_cli(*args, cwd=tmp_path)
    assert out.returncode == 3, out.stderr[-3000:]  # stopped before reaching its target
    saved = json.loads((tmp_path / "run" / "result.json").read_text())
    assert (saved["status"], saved["steps"]) == ("stopped", 8)
    assert saved["arguments"]["callbacks"] == ["EarlyStopping"]
    again = run_cli(*args, cwd=tmp_path)
    assert again.returncode == 3 and "already stopped at step 8" in again.stdout
    assert json.loads((tmp_path / "run" / "result.json").read_text()) == saved


def test_version_and_help_answer_without_tensorflow_and_debug_shows_the_traceback():
    script = ("import sys; from mlbench import cli; code = cli.main(['--version']); "
              "print(code, 'tensorflow' in sys.modules)\n"
              "try:\n    cli.main(['--help'])\nexcept SystemExit as e:\n"
              "    print('help', e.code, 'tensorflow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=ENV,
                         capture_output=True, text=True, timeout=120)
    from mlbench.version import __version__
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["mlbench", __version__] and lines[1] == "0 False", out.stderr
    assert "    evaluate " in out.stdout and lines[-1] == "help 0 False"  # no TensorFlow
    bad = ("train", "--model=resnet5O", "--data=digits", "--global_batch_size=8",
           "--train_steps=1")
    plain, debug = run_cli(*bad), run_cli("--debug", *bad)
    assert plain.returncode == debug.returncode == 2
    assert "Traceback" not in plain.stderr and "'resnet5O'" in plain.stderr
    assert "Traceback (most recent call last)" in debug.stderr and "'resnet5O'" in debug.stderr


def test_list_names_what_each_flag_takes():
    import mlbench
    from mlbench.projector import platforms
    models, suites, names = (mlbench_here("list", what)
                             for what in ("models", "suites", "platforms"))
    assert models.stdout.split() == mlbench.models.list_models()
    assert {"dgx1_p100", "cpu_2core"} <= set(suites.stdout.split())
    assert [line.split("\t")[0] for line in names.stdout.splitlines()] == sorted(platforms.RECORDS)
    assert mlbench_here("list", "nothing").returncode == 2


@pytest.mark.parametrize("command", ["train", "benchmark"])
def test_one_alias_table_serves_both_commands(command):
    """tf_cnn_benchmarks' names and the API's reach the same argument in train and
    benchmark; train refuses benchmark's --display_every, naming what to give instead."""
    from mlbench import cli
    parser = cli.build_parser(only=command)
    for api, alias, value in (("num_devices", "num_gpus", "2"),
                              ("all_reduce", "all_reduce_spec", "nccl")):
        assert (getattr(parser.parse_args([command, f"--{api}={value}"]), api)
                == getattr(parser.parse_args([command, f"--{alias}={value}"]), api)
                == (int(value) if value.isdigit() else value))
    if command == "train":
        out = mlbench_here("train", "--display_every=10")
        assert out.returncode == 2 and "--steps_per_loop" in out.stderr


def test_the_projector_has_one_default_platform():
    import inspect
    from mlbench import cli
    from mlbench.projector import platforms, throughput, time_to_train
    assert inspect.signature(throughput.project_throughput).parameters["platform"].default == \
        platforms.DEFAULT
    parsed = [cli.build_parser(only=c).parse_args(a) for c, a in (
        ("project", ["project"]), ("benchmark", ["benchmark"]))]
    assert parsed[0].platform == parsed[1].project_platform == platforms.DEFAULT
    by_hand = time_to_train.project(model="resnet50", images_per_sec=100.0, batch_size=64)
    assert by_hand.projection.platform == platforms.DEFAULT


@pytest.mark.parametrize("command", ["train", "benchmark"])
def test_xla_compile_is_spelled_both_ways_in_both_commands(command):
    from mlbench import cli
    parser = cli.build_parser(only=command)
    values = [parser.parse_args([command, *flags]).jit_compile for flags in (
        ["--xla_compile"], ["--xla_compile=true"], ["--xla_compile=false"], ["--noxla_compile"],
        ["--xla_compile=auto"])]
    assert values == [True, True, False, False, "auto"]
    with pytest.raises(SystemExit):
        parser.parse_args([command, "--xla_compile=maybe"])


PYTHON_ONLY = ("tf.data", "DataSource", "(x, y)", "a function", "zero-argument", "as in ",
               "(10 / 100 / 5)", "TrainResult", "tf_keras.Model", "True |", "False refuses",
               "None")


def test_no_flag_help_speaks_python():
    """Help written for the shell: no Python values, no API paths, and nothing in
    backquotes but commands and flags (`mlbench list models`, `--data_dir`)."""
    import re
    from mlbench import cli
    found = []
    for name in cli.COMMANDS:
        parser = cli.build_parser(only=name)
        sub = next(a for a in parser._actions if hasattr(a, "choices")
                   and isinstance(a.choices, dict)).choices[name]
        for action in sub._actions:
            text = action.help or ""
            if text in ("", "==SUPPRESS=="):
                continue
            quoted = [q for q in re.findall(r"`([^`]*)`", text)
                      if not q.startswith(("mlbench ", "--"))]
            bad = quoted + [p for p in PYTHON_ONLY if p in text] + re.findall(
                r"mlbench\.[a-z_]+\.[a-z_]+", text)
            if bad:
                found.append((name, action.option_strings[0], bad))
    assert not found
