"""Ctrl-C / SIGTERM during a real `mlbench train`: checkpoint, result.json, exit code, resume."""
import json
import os
import re
import signal
import subprocess

import numpy as np
import tensorflow as tf

from conftest import REPO
from harness import mlbench_command

ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1"}
STEPS = 600


def command(model_dir):
    return mlbench_command("train", "--model=simple_cnn", "--data=digits",
                           "--model_options=image_size=8", "--global_batch_size=32",
                           "--precision=float32", f"--train_steps={STEPS}", "--steps_per_loop=1",
                           "--checkpoint_every=50", f"--model_dir={model_dir}")


def interrupted_run(model_dir, signum, after_step=60):
    """Starts a run, sends `signum` once its progress passes `after_step`; (code, out, err)."""
    process = subprocess.Popen(command(model_dir), cwd=REPO, env=ENV, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    lines = []
    for line in process.stdout:
        lines.append(line)
        match = re.match(r"step (\d+)/", line)
        if match and int(match.group(1)) >= after_step:
            process.send_signal(signum)
            break
    out, err = process.communicate(timeout=300)
    return process.returncode, "".join(lines) + out, err


def checkpoint_values(model_dir):
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(f"{model_dir}/checkpoints"))
    names = [n for n in reader.get_variable_to_shape_map()
             if "save_counter" not in n and "OBJECT_GRAPH" not in n]
    return {n: reader.get_tensor(n) for n in names}


def test_sigint_saves_says_so_exits_130_and_the_rerun_ends_as_an_uninterrupted_run(tmp_path):
    run = tmp_path / "run"
    code, out, err = interrupted_run(run, signal.SIGINT)
    assert code == 130, err[-3000:]
    stopped = json.loads((run / "result.json").read_text())
    step = stopped["steps"]
    assert stopped["status"] == "interrupted" and 60 <= step < STEPS
    assert step % 50, "the interrupt checkpoint must be newer than the periodic one at 50"
    assert tf.train.latest_checkpoint(str(run / "checkpoints")).endswith(f"ckpt-{step}")
    assert f"interrupted (SIGINT) at step {step}; checkpoint " in out
    assert "run the same command to resume" in out and "Traceback" not in err
    # the first Ctrl-C is acknowledged at once, naming the step the save happens at
    assert re.search(r"SIGINT received: stopping at step \d+ .* SIGINT again exits at once "
                     "without saving", err), err[-2000:]
    resumed = subprocess.run(command(run), cwd=REPO, env=ENV, capture_output=True, text=True,
                             timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resumed from step {step}" in resumed.stdout
    straight = subprocess.run(command(tmp_path / "straight"), cwd=REPO, env=ENV,
                              capture_output=True, text=True, timeout=300)
    assert straight.returncode == 0, straight.stderr[-3000:]
    a, b = checkpoint_values(run), checkpoint_values(tmp_path / "straight")
    assert sorted(a) == sorted(b) and any("model" in n for n in a)
    for name in a:
        np.testing.assert_allclose(a[name], b[name], rtol=1e-5, atol=1e-6, err_msg=name)
    final = json.loads((run / "result.json").read_text())
    assert final["status"] == "finished" and final["steps"] == STEPS
    assert [h["step"] for h in final["history"]][:2] == [1, 2]  # the history was appended


def test_sigterm_saves_and_exits_143(tmp_path):
    code, out, err = interrupted_run(tmp_path / "run", signal.SIGTERM)
    assert code == 143, err[-3000:]
    stopped = json.loads((tmp_path / "run" / "result.json").read_text())
    assert stopped["status"] == "interrupted"
    assert f"interrupted (SIGTERM) at step {stopped['steps']}" in out
