"""Distribution on this machine: localhost workers, logical CPU devices, launcher failures."""
import html
import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

import mlbench
from mlbench import distribute
from conftest import REPO, host_op_model
from harness import mlbench_process

# Multi-process tests run one at a time on one `make test` worker (pytest-xdist's
# loadgroup): two at once, each with its TensorFlow processes, starved a 2-core machine
# until a chief failed to create a thread (in two of six runs).
pytestmark = pytest.mark.xdist_group("multi_process")

SCRIPT = os.path.join(REPO, "tests", "distribute", "worker_script.py")
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}


def launch(*args, env=None, timeout=600):
    return mlbench_process("launch", *args, env=env, timeout=timeout)


def weights(path):
    saved = np.load(path)
    return [saved[k] for k in sorted(saved.files, key=lambda k: int(k.split("_")[1]))]


def test_two_workers_match_each_other_and_one_process(tmp_path):
    multi, single = tmp_path / "multi", tmp_path / "single"
    multi.mkdir(), single.mkdir()
    out = launch("--num_workers=2", "--", sys.executable, SCRIPT, str(multi),
                 "multi_worker_mirrored", "4")
    assert out.returncode == 0, out.stdout[-3000:]
    assert "[worker 1] worker_1 done: steps=4 strategy=MultiWorkerMirroredStrategy replicas=2" \
        in out.stdout
    alone = subprocess.run([sys.executable, SCRIPT, str(single), "one_device", "4"], env=ENV,
                           capture_output=True, text=True, timeout=600)
    assert alone.returncode == 0, alone.stderr[-2000:]
    w0, w1 = weights(multi / "worker_0.npz"), weights(multi / "worker_1.npz")
    ws = weights(single / "single.npz")
    for a, b, c in zip(w0, w1, ws):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-6)
    assert (multi / "run" / "result.json").exists()  # only the chief wrote the run directory
    assert json.loads((multi / "run" / "result.json").read_text())["ran"]["replicas"] == 2


def test_launch_with_auto_strategy_trains_one_multi_worker_job(tmp_path):
    """`mlbench launch -- train ...` with strategy 'auto': TF_CONFIG → MultiWorkerMirrored."""
    out = launch("--num_workers=2", "--", "train", "--model=simple_cnn", "--data=digits",
                 "--global_batch_size=32", "--train_steps=4", "--precision=float32",
                 "--model_options=image_size=8", "--noverbose", f"--model_dir={tmp_path}")
    assert out.returncode == 0, out.stdout[-3000:]
    saved = json.loads((tmp_path / "result.json").read_text())
    assert saved["ran"]["strategy"] == "MultiWorkerMirroredStrategy"
    assert saved["ran"]["replicas"] == 2 and saved["steps"] == 4
    findings = {f["topic"]: f for f in saved["diagnosis"]}
    # each worker's pipeline feeds its one replica: compared at that worker's share
    assert findings["input"]["figures"]["replicas"] == 1
    assert findings["compile"]["figures"]["traces"] == 1
    page = mlbench_process("report", str(tmp_path), f"--output={tmp_path / 'page.html'}")
    assert page.returncode == 0, page.stderr[-2000:]
    shown = (tmp_path / "page.html").read_text()
    assert 'id="s0-diagnosis-table"' in shown
    assert all(html.escape(f["detail"], quote=True) in shown for f in saved["diagnosis"])


def test_killed_worker_stops_the_launch_and_is_named(tmp_path):
    start = time.monotonic()
    out = launch("--num_workers=2", "--", sys.executable, SCRIPT, str(tmp_path),
                 "multi_worker_mirrored", "100000", env={**ENV, "DIE_AFTER_S": "12"})
    elapsed = time.monotonic() - start
    assert out.returncode == 128 + 9  # the shell's code for a SIGKILLed process
    assert "worker 1 was stopped by SIGKILL (exit code 137)" in out.stderr
    assert elapsed < 120


def test_a_stopped_worker_is_named_with_its_last_step_and_the_run_resumes(tmp_path):
    """SIGSTOP (not kill): the peer is alive but silent. The collective timeout ends the
    wait of worker 0, which fails; the launcher names worker 1 from its stopped process
    and heartbeat, and the chief's checkpoint resumes the run."""
    start = time.monotonic()
    out = launch("--num_workers=2", "--", sys.executable, SCRIPT, str(tmp_path),
                 "multi_worker_mirrored", "100000",
                 env={**ENV, "STOP_AFTER_S": "12", "MLBENCH_COLLECTIVE_TIMEOUT_S": "10",
                      "CHECKPOINT_EVERY": "10"})
    elapsed = time.monotonic() - start
    assert out.returncode != 0
    named = re.search(r"worker 1 stopped responding: its process is stopped \(SIGSTOP or a "
                      r"debugger\); its last finished step was (\d+), last heartbeat \d+ s "
                      r"ago\. worker 0 failed waiting for it", out.stderr)
    assert named, out.stderr[-2000:]
    assert "collective timeout of 10 s" in out.stdout
    assert elapsed < 12 + 10 + 60  # stop, the timeout, start-up and shutdown slack
    saved = tf.train.latest_checkpoint(str(tmp_path / "run" / "checkpoints"))
    last_saved = int(saved.rsplit("-", 1)[1])
    assert 0 < last_saved <= int(named.group(1))
    again = launch("--num_workers=2", "--", sys.executable, SCRIPT, str(tmp_path),
                   "multi_worker_mirrored", str(last_saved + 2))
    assert again.returncode == 0, again.stdout[-3000:]
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["resumed_from_step"] == last_saved and result["steps"] == last_saved + 2


def test_a_sigterm_to_one_worker_stops_every_worker_at_one_step_and_the_run_resumes(
        tmp_path):
    """One pod preempted: worker 1 alone gets SIGTERM. Every worker stops after the same
    block (an all-reduced flag), the chief saves that step, all exit 143 at once (no wait
    for the collective timeout), and the same command resumes from that step."""
    start = time.monotonic()
    out = launch("--num_workers=2", "--", sys.executable, SCRIPT, str(tmp_path),
                 "multi_worker_mirrored", "100000",
                 env={**ENV, "TERM_AFTER_S": "12", "MLBENCH_COLLECTIVE_TIMEOUT_S": "120"})
    elapsed = time.monotonic() - start
    assert out.returncode == 143, out.stdout[-3000:] + out.stderr[-2000:]
    assert elapsed < 12 + 90  # well under the collective timeout of 120 s
    assert "another worker was asked to stop" in out.stdout + out.stderr
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["status"] == "interrupted"
    saved = tf.train.latest_checkpoint(str(tmp_path / "run" / "checkpoints"))
    assert int(saved.rsplit("-", 1)[1]) == result["steps"] > 0  # nothing lost
    again = launch("--num_workers=2", "--", sys.executable, SCRIPT, str(tmp_path),
                   "multi_worker_mirrored", str(result["steps"] + 2))
    assert again.returncode == 0, again.stdout[-3000:]
    resumed = json.loads((tmp_path / "run" / "result.json").read_text())
    assert resumed["resumed_from_step"] == result["steps"]
    assert resumed["steps"] == result["steps"] + 2
    straight = tmp_path / "straight"
    straight.mkdir()
    alone = launch("--num_workers=2", "--", sys.executable, SCRIPT, str(straight),
                   "multi_worker_mirrored", str(result["steps"] + 2))
    assert alone.returncode == 0, alone.stdout[-3000:]
    for a, b in zip(weights(tmp_path / "worker_0.npz"), weights(straight / "worker_0.npz")):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)


@pytest.mark.parametrize("strategy", ["central_storage", "mirrored"])
def test_two_device_strategies_equal_one_device(vectors, strategy):
    def run(name, devices):
        result = mlbench.train(model="mlp", data=vectors, global_batch_size=32, train_steps=3,
                               strategy=name, num_devices=devices, precision="float32",
                               learning_rate=0.5, verbose=False)
        return result, [v.numpy() for v in result.model.trainable_variables]
    one, w1 = run("one_device", None)
    two, w2 = run(strategy, 2)
    assert two.ran["replicas"] == 2
    for a, b in zip(w1, w2):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_xla_refusal_falls_back_and_is_recorded(vectors, monkeypatch):
    """A model with a host-side op XLA cannot compile: the step runs uncompiled, and says so."""
    host_op_model(monkeypatch)
    result = mlbench.train(model="host_mlp", data=vectors, global_batch_size=32, train_steps=2,
                           jit_compile=True, precision="float32", verbose=False)
    assert result.ran["jit_compile"] is False and result.steps == 2


@pytest.mark.parametrize("raw,needle", [
    ("{not json", "not valid JSON"),
    ('{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 3}}',
     "index (3) is out of range"),
    ('{"cluster": {"worker": ["a:1"]}}', "must have 'cluster' and 'task'"),
])
def test_malformed_tf_config_is_refused(raw, needle):
    with pytest.raises(ValueError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        distribute.parse_tf_config({"TF_CONFIG": raw})


def test_port_in_use_is_refused():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(ValueError, match=f"port {port} .* is in use"):
            distribute.tf_config_from_hosts([f"127.0.0.1:{port}", "127.0.0.1:1"], 0)


def test_parameter_server_without_ps_hosts_is_refused(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ValueError, match="needs ps hosts"):
        distribute.get_strategy("parameter_server")


def test_tpu_without_tpu_says_so():
    with pytest.raises(RuntimeError, match="no TPU was found"):
        distribute.get_strategy("tpu")
