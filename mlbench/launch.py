"""`mlbench launch`: N local workers (and M parameter servers) on 127.0.0.1 with TF_CONFIG.

Each process gets its own TF_CONFIG (free ports picked here), its output is
streamed with a `[worker 0]` prefix, and the first process that fails stops
the others: the launcher exits non-zero naming it, instead of leaving the
survivors blocked in a collective.
"""
import os
import socket
import subprocess
import sys
import threading
import time

from mlbench.distribute.cluster import tf_config

MLBENCH_COMMANDS = ("train", "benchmark", "mlperf")


def free_ports(n):
    """n distinct free TCP ports on 127.0.0.1 (bound then released)."""
    sockets, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        sockets.append(s)
        ports.append(s.getsockname()[1])
    for s in sockets:
        s.close()
    return ports


def cluster_spec(num_workers, num_ps=0, ports=None):
    """{'worker': [...], 'ps': [...]} on 127.0.0.1; with ps hosts, worker 0 acts as chief."""
    ports = ports or free_ports(num_workers + num_ps)
    hosts = [f"127.0.0.1:{p}" for p in ports]
    cluster = {"worker": hosts[:num_workers]}
    if num_ps:
        cluster = {"chief": hosts[:1], "worker": hosts[1:num_workers], "ps": hosts[num_workers:]}
    return cluster


def tasks(cluster):
    return [(job, i) for job in ("chief", "worker", "ps") for i in range(len(cluster.get(job, [])))]


def command_line(args):
    """`train ...` → `python -m mlbench train ...`; anything else runs as given."""
    if not args:
        raise ValueError("`mlbench launch` needs a command after `--` (train|benchmark|mlperf ...).")
    if args[0] in MLBENCH_COMMANDS:
        return [sys.executable, "-m", "mlbench", *args]
    return list(args)


def _stream(proc, prefix, out):
    for line in proc.stdout:
        out.write(f"[{prefix}] {line}")
        out.flush()


def launch(args, num_workers, num_ps=0, timeout_s=None, out=sys.stdout):
    """Runs the command in every task; returns (exit code, name of the first failed task or None)."""
    if num_workers < 1:
        raise ValueError(f"`num_workers` ({num_workers}) must be >= 1.")
    if num_ps < 0:
        raise ValueError(f"`num_ps` ({num_ps}) must be >= 0.")
    cmd, cluster = command_line(args), cluster_spec(num_workers, num_ps)
    procs, threads = {}, []
    for job, index in tasks(cluster):
        env = {**os.environ, "TF_CONFIG": tf_config(cluster, job, index)}
        name = f"{job} {index}"
        procs[name] = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True)
        threads.append(threading.Thread(target=_stream, args=(procs[name], name, out),
                                        daemon=True))
        threads[-1].start()
    code, failed = _wait(procs, timeout_s)
    for t in threads:
        t.join(timeout=5)
    return code, failed


def _wait(procs, timeout_s):
    """Waits for all; on the first failure (or the timeout) stops the rest."""
    deadline = time.monotonic() + timeout_s if timeout_s else None
    # parameter servers never exit on their own: the run ends when the others do
    active = {n: p for n, p in procs.items() if not n.startswith("ps")}
    while True:
        for name, proc in procs.items():
            rc = proc.poll()
            if rc not in (None, 0):
                _stop(procs)
                return rc if rc > 0 else 1, name  # killed by a signal: rc < 0
        if all(p.poll() == 0 for p in active.values()):
            _stop(procs)
            return 0, None
        if deadline and time.monotonic() > deadline:
            _stop(procs)
            return 124, "timeout"
        time.sleep(0.2)


def _stop(procs):
    for proc in procs.values():
        if proc.poll() is None:
            proc.terminate()
    for proc in procs.values():
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
