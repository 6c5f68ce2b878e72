"""`mlbench launch` opens no door: its tasks run in a private network namespace, so a
TensorFlow server that listens on every interface is reachable from no address of this
machine outside the job (`distribute.isolation`)."""
import os
import re
import socket
import subprocess

import pytest

from harness import mlbench_started
from mlbench.distribute import isolation

pytestmark = pytest.mark.xdist_group("multi_process")

needs_namespaces = pytest.mark.skipif(not isolation.available(),
                                      reason="no unprivileged network namespace here")


def listening_ports(pid):
    """TCP ports in LISTEN state in the network namespace of process `pid`."""
    ports = set()
    for table in ("tcp", "tcp6"):
        with open(f"/proc/{pid}/net/{table}") as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[3] == "0A":  # LISTEN
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def machine_addresses():
    """This machine's non-loopback IPv4 addresses."""
    out = subprocess.run(["ip", "-o", "-4", "addr", "show", "scope", "global"],
                         capture_output=True, text=True).stdout
    return re.findall(r"inet (\d+\.\d+\.\d+\.\d+)/", out)


def refused(address, port):
    with socket.socket() as s:
        s.settimeout(5)
        try:
            s.connect((address, port))
        except (ConnectionRefusedError, socket.timeout, OSError):
            return True
    return False


def task_pids(launcher):
    """The pids of the launch's tasks (children of the relaunched launcher)."""
    found = subprocess.run(["pgrep", "-P", str(launcher.pid)], capture_output=True,
                           text=True).stdout.split()
    inner = [int(p) for p in found]
    tasks = []
    for pid in inner:  # unshare execs the inner launcher; its children are the tasks
        tasks += [int(p) for p in subprocess.run(["pgrep", "-P", str(pid)],
                                                 capture_output=True,
                                                 text=True).stdout.split()]
    return tasks


@needs_namespaces
def test_a_local_launchs_servers_cannot_be_reached_from_outside_the_job(tmp_path):
    launcher = mlbench_started("launch", "--num_workers=2", "--launch_timeout_s=240", "--",
                               "train", "--model=mlp", "--data=digits",
                               "--global_batch_size=32", "--train_steps=100000",
                               "--steps_per_loop=50", f"--model_dir={tmp_path / 'run'}")
    try:
        for line in launcher.stdout:  # the workers are past their first block: serving
            if re.search(r"\[worker 0\] step \d+/", line):
                break
        tasks = task_pids(launcher)
        assert len(tasks) == 2, tasks
        ours = os.readlink("/proc/self/ns/net")
        ports = set()
        for pid in tasks:
            assert os.readlink(f"/proc/{pid}/ns/net") != ours  # a network of their own
            ports |= listening_ports(pid)
        assert ports, "the workers' servers listen on no port"
        for port in ports:  # from this machine's namespace: every address refuses
            for address in ["127.0.0.1"] + machine_addresses():
                assert refused(address, port), (address, port)
    finally:
        launcher.terminate()
        launcher.wait(timeout=60)


def test_without_isolation_the_launch_says_the_network_must_be_private(tmp_path):
    from harness import mlbench_here
    out = mlbench_here("launch", "--num_workers=1", "--isolate_network=false", "--",
                       "train", "--model=mlp", "--data=digits", "--global_batch_size=32",
                       "--train_steps=2", f"--model_dir={tmp_path / 'run'}")
    assert out.returncode == 0, out.stderr
    assert "TensorFlow's servers listen on every interface" in out.stderr
