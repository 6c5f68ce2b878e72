"""What many tests share: the mlbench command run in a process or in this one, the tiny
train and benchmark settings, and clocks that tests drive by hand."""
import contextlib
import dataclasses
import io
import os
import random
import subprocess
import sys

from conftest import REPO

ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}

# the tiny runs: a small CNN on the bundled 8×8 digits, a 16-input MLP, a tiny benchmark
DIGITS = dict(model="simple_cnn", data="digits", global_batch_size=32, precision="float32",
              model_options={"image_size": 8}, verbose=False)
MLP = dict(model="mlp", global_batch_size=32, verbose=False,
           model_options={"input_dim": 16, "hidden": (8,)})
TINY_BENCHMARK = ["--model=resnet_tiny", "--batch_size=8", "--num_warmup_batches=1",
                  "--num_batches=3", "--num_runs=2", "--precision=float32"]


def mlbench_command(*args):
    """The argv of `python -m mlbench <args>`: the one way tests start the command line
    in a process of its own (`mlbench_process`, `mlbench_started`)."""
    return [sys.executable, "-m", "mlbench", *args]


def mlbench_process(*args, cwd=REPO, timeout=1800, env=None):
    """`python -m mlbench <args>` in a fresh process (what a shell user runs), waited for."""
    return subprocess.run(mlbench_command(*args), cwd=cwd, env=env or ENV,
                          capture_output=True, text=True, timeout=timeout)


def mlbench_started(*args, cwd=REPO, env=None, stderr=subprocess.PIPE):
    """`python -m mlbench <args>` started in the background (a sidecar, a worker): the
    Popen, output captured as text."""
    return subprocess.Popen(mlbench_command(*args), cwd=cwd, env=env or ENV,
                            stdout=subprocess.PIPE, stderr=stderr, text=True)


@dataclasses.dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def mlbench_here(*args, cwd=REPO):
    """`mlbench <args>` in this process: the same `cli.main`, without a second TensorFlow
    start (for commands whose process-level behaviour is not what a test checks)."""
    from mlbench import cli
    out, err, here = io.StringIO(), io.StringIO(), os.getcwd()
    if cwd:
        os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(list(args))
            except SystemExit as e:  # argparse's own errors
                code = e.code
    finally:
        os.chdir(here)
    return Ran(code, out.getvalue(), err.getvalue())


class ScriptedClock:
    """Time that advances only by scripted step durations (`step()`)."""

    def __init__(self, durations):
        self.now, self.durations = 0.0, list(durations)

    def __call__(self):
        return self.now

    def step(self):
        self.now += self.durations.pop(0)


class StepClock:
    """A clock for `benchmark(clock=...)`: each step (a start and a stop reading) lasts
    `step_s` × (1 ± `jitter`), drawn from a seeded generator; no gap between steps."""

    def __init__(self, step_s, jitter, seed):
        self.step_s, self.jitter, self.random = step_s, jitter, random.Random(seed)
        self.now, self.started = 0.0, False

    def __call__(self):
        if self.started:
            self.now += self.step_s * (1 + self.random.uniform(-self.jitter, self.jitter))
        self.started = not self.started
        return self.now
