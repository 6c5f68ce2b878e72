"""Heartbeats of the tasks `mlbench launch` starts, so a silent worker is named from
evidence.

A worker that stops answering (SIGSTOP, a lost network, an op that never returns)
makes its peers fail in a collective, and TensorFlow's error names the peer that
*reported*, not the one that went silent (tensorflow#35878, #60706, #62065). Each
task therefore writes `<job>-<index>.json` in the launcher's folder: its last finished
step (on every block) and the time (every INTERVAL_S, from a thread), so the launcher
can tell a task that went quiet from the ones that waited for it.
"""
import json
import os
import threading
import time

from mlbench.distribute import cluster
from mlbench.files import write_json
from mlbench.training.callbacks import Callback

ENV = "MLBENCH_HEARTBEAT_DIR"
INTERVAL_S = 1.0
STALE_S = 5 * INTERVAL_S  # no beat for this long: the task is not running


def task_name(job, index):
    return f"{job} {index}"


class Heartbeat(Callback):
    """Beats every INTERVAL_S with the last finished step, from run start to run stop."""

    def __init__(self, folder, task):
        self.path = os.path.join(folder, task.replace(" ", "-") + ".json")
        self.task, self.step, self.state = task, None, "starting"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)
        self._thread.start()

    def _beat(self):
        while not self._stop.is_set():
            self._write()
            self._stop.wait(INTERVAL_S)

    def _write(self):
        try:
            write_json(self.path, {"task": self.task, "step": self.step, "state": self.state,
                                   "time": time.time(), "pid": os.getpid()})
        except OSError:
            pass  # a heartbeat must never stop the run it reports on

    def on_run_start(self):
        self.state = "training"
        self._write()

    def on_block_stop(self, step, logs=None):
        self.step = step
        self._write()

    def on_run_stop(self, reached_target):
        self.state = "done"
        self._stop.set()
        self._write()


def for_this_task(environ=None):
    """A Heartbeat when `mlbench launch` asked for one (ENV set, TF_CONFIG names the
    task), else None."""
    environ = os.environ if environ is None else environ
    config = cluster.parse_tf_config(environ)
    if not environ.get(ENV) or not config:
        return None
    task = config["task"]
    return Heartbeat(environ[ENV], task_name(task["type"], task.get("index", 0)))


def read_all(folder):
    """{task: its last heartbeat} of every task that wrote one."""
    beats = {}
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
        if name.endswith(".json"):
            try:
                with open(os.path.join(folder, name)) as f:
                    beat = json.load(f)
            except (OSError, ValueError):
                continue
            beats[beat["task"]] = beat
    return beats


def process_state(pid):
    """'stopped' (SIGSTOP or a debugger), 'zombie', 'running' or None (no such process)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None
    return {"T": "stopped", "t": "stopped", "Z": "zombie"}.get(state, "running")


def silent_task(folder, pids, reported, now=None):
    """(task, sentence) for the task the evidence says went silent first, or None.

    Evidence, in order: a process stopped by a signal; a heartbeat older than STALE_S
    while others are fresh; the lowest last step when the others went further.
    `pids` maps each task to its process id; `reported` is the task that exited first.
    """
    now = time.time() if now is None else now
    beats = read_all(folder)
    for task, pid in pids.items():
        if process_state(pid) == "stopped":
            return task, _sentence(task, beats.get(task), now, "its process is stopped "
                                   "(SIGSTOP or a debugger)")
    stale = [t for t, b in beats.items() if b["state"] != "done" and now - b["time"] > STALE_S]
    if stale and len(stale) < len(beats):
        task = min(stale, key=lambda t: beats[t]["time"])
        return task, _sentence(task, beats[task], now, "its heartbeat stopped")
    steps = {t: b["step"] for t, b in beats.items() if b.get("step") is not None}
    if len(set(steps.values())) > 1:
        task = min(steps, key=steps.get)
        if task != reported:
            return task, _sentence(task, beats[task], now, f"it is behind the others "
                                   f"(step {steps[task]} vs {max(steps.values())})")
    return None


def _sentence(task, beat, now, why):
    if beat is None:
        return f"{task} stopped responding: {why}; it never reported a step."
    last = (f"its last finished step was {beat['step']}" if beat.get("step") is not None
            else "it finished no step")
    return (f"{task} stopped responding: {why}; {last}, last heartbeat "
            f"{now - beat['time']:.0f} s ago.")
