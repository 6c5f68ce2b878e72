"""`mlbench launch`: N local workers (and M parameter servers) on 127.0.0.1 with TF_CONFIG.

Each process gets its own TF_CONFIG (free ports picked here), its output is
streamed with a `[worker 0]` prefix, and the first process that fails stops
the others: the launcher exits non-zero naming it, instead of leaving the
survivors blocked in a collective.
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

from mlbench.distribute import heartbeat
from mlbench.distribute.cluster import tf_config

MLBENCH_COMMANDS = ("train", "benchmark", "mlperf")


def reserve_ports(n):
    """n distinct free TCP ports on 127.0.0.1, held until the launch ends.

    Each port stays bound here with SO_REUSEPORT (never listening, so it takes
    no connections): gRPC servers bind with SO_REUSEPORT too, so the tasks can
    bind them, while no other program can take them between choosing and binding.
    """
    sockets = []
    for _ in range(n):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        s.bind(("0.0.0.0", 0))  # TF's gRPC servers bind the wildcard address
        sockets.append(s)
    return [s.getsockname()[1] for s in sockets], sockets


def cluster_spec(num_workers, num_ps, ports):
    """{'worker': [...]} on 127.0.0.1; with ps hosts {'chief', 'worker', 'ps'}: the chief
    coordinates and `num_workers` workers compute."""
    hosts = [f"127.0.0.1:{p}" for p in ports]
    if not num_ps:
        return {"worker": hosts[:num_workers]}
    return {"chief": hosts[:1], "worker": hosts[1:1 + num_workers],
            "ps": hosts[1 + num_workers:1 + num_workers + num_ps]}


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
    """Runs the command in every task; returns (exit code, the task that failed or None,
    a sentence naming the task that went silent with its evidence, or None).

    The task that fails first is often not the culprit: a worker waiting in a collective
    for a silent peer fails, while the peer is stopped. The tasks' heartbeats
    (`mlbench.distribute.heartbeat`) and process states name the silent one."""
    if num_workers < 1:
        raise ValueError(f"`num_workers` ({num_workers}) must be >= 1.")
    if num_ps < 0:
        raise ValueError(f"`num_ps` ({num_ps}) must be >= 0.")
    cmd = command_line(args)
    ports, held = reserve_ports(num_workers + num_ps + (1 if num_ps else 0))
    cluster = cluster_spec(num_workers, num_ps, ports)
    procs, threads = {}, []
    beats = tempfile.mkdtemp(prefix="mlbench_heartbeats_")

    def start(job, index):
        env = {**os.environ, "TF_CONFIG": tf_config(cluster, job, index),
               heartbeat.ENV: beats}
        name = f"{job} {index}"
        procs[name] = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True)
        threads.append(threading.Thread(target=_stream, args=(procs[name], name, out),
                                        daemon=True))
        threads[-1].start()
    for job, index in tasks(cluster):
        start(job, index)
    restart = (lambda name: start(*_task_of(name))) if num_ps else None
    try:
        code, failed, silent = _wait(procs, timeout_s, decisive=["chief 0"] if num_ps else None,
                                     restart=restart, beats=beats)
    finally:
        for sock in held:
            sock.close()
        shutil.rmtree(beats, ignore_errors=True)
    for t in threads:
        t.join(timeout=5)
    return code, failed, silent


def _task_of(name):
    job, index = name.split()
    return job, int(index)


MAX_RESTARTS = 3  # per worker task, as a cluster manager would restart a lost pod


def ps_grace_s():
    """How long the chief may take to fail after its ps died."""
    return float(os.environ.get("MLBENCH_COLLECTIVE_TIMEOUT_S", "300"))


def _wait(procs, timeout_s, decisive=None, restart=None, beats=None):
    """Waits for the decisive tasks; on the first failure (or the timeout) stops the rest.

    Without parameter servers every worker is decisive: one failing stops all (the
    others would block in a collective). With them only the chief is: ps and worker
    tasks serve until stopped; a worker that dies is restarted at its address
    (`restart`, up to MAX_RESTARTS times, as Kubernetes or SLURM would), while the
    chief's coordinator reschedules its steps on the others.

    Returns (exit code, the task that failed, the silent task's sentence or None): the
    evidence is read before the others are stopped.
    """
    deadline = time.monotonic() + timeout_s if timeout_s else None
    active = {n: p for n, p in procs.items() if n in (decisive or procs) and
              not n.startswith("ps")}
    restarts, lost_ps = {}, []
    while True:
        for name, proc in list(procs.items()):
            rc = proc.poll()
            if rc not in (None, 0) and name not in active and procs[name] is proc:
                if not _lost(name, rc, restarts, restart, procs):
                    lost_ps.append((name, time.monotonic() + ps_grace_s()))
        if lost_ps and time.monotonic() > lost_ps[0][1] and any(
                p.poll() is None for p in active.values()):
            # TF waits for a ps it has not reached yet (tasks start in any order), so a
            # chief that lost its ps before connecting would wait forever.
            print(f"mlbench launch: {lost_ps[0][0]} died and the chief did not stop within "
                  f"{ps_grace_s():g} s (MLBENCH_COLLECTIVE_TIMEOUT_S); stopped everything.",
                  file=sys.stderr, flush=True)
            _stop(procs)
            return 1, lost_ps[0][0], None
        for name, proc in active.items():
            rc = proc.poll()
            if rc not in (None, 0):
                silent = _silent(beats, procs, name)
                _stop(procs)
                # killed by a signal (rc = -signum): the shell's code for it, 128 + signum
                return rc if rc > 0 else 128 - rc, name, silent
        if all(p.poll() == 0 for p in active.values()):
            _stop(procs)
            return 0, None, None
        if deadline and time.monotonic() > deadline:
            silent = _silent(beats, procs, None)
            _stop(procs)
            return 124, "timeout", silent
        time.sleep(0.2)


def _silent(beats, procs, failed):
    """The sentence naming the task that went silent (not the one that failed), or None."""
    if not beats:
        return None
    found = heartbeat.silent_task(beats, {n: p.pid for n, p in procs.items()
                                          if p.poll() is None}, failed)
    return found[1] if found and found[0] != failed else None


def _lost(name, rc, restarts, restart, procs):
    """A non-decisive task exited: restart a worker (bounded; True), or report it (False)."""
    if name.startswith("worker") and restart and restarts.get(name, 0) < MAX_RESTARTS:
        restarts[name] = restarts.get(name, 0) + 1
        print(f"mlbench launch: {name} exited ({rc}); restarting it "
              f"({restarts[name]}/{MAX_RESTARTS}); the chief reschedules its steps",
              file=sys.stderr, flush=True)
        restart(name)
        return True
    print(f"mlbench launch: {name} exited ({rc}); the chief will stop with an error",
          file=sys.stderr, flush=True)
    procs.pop(name)
    return False


def _stop(procs):
    for proc in procs.values():
        if proc.poll() is None:
            proc.terminate()
    for proc in procs.values():
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
