"""Cluster membership from host lists: a job whose servers are reachable from other hosts
is told, once, that its network must be private (TensorFlow's own rule)."""
import json
import socket

from harness import mlbench_here
from mlbench.distribute import cluster


def test_off_this_machine_names_every_address_that_is_not_loopback():
    raw = json.dumps({"cluster": {"worker": ["127.0.0.1:1", "localhost:2", "[::1]:3",
                                             "10.1.2.3:4", "node-b:5"],
                                  "ps": ["127.0.0.2:6", "[2001:db8::1]:7"]},
                      "task": {"type": "worker", "index": 0}})
    assert cluster.off_this_machine(raw) == ["10.1.2.3:4", "node-b:5", "[2001:db8::1]:7"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_host_list_off_this_machine_is_warned_about_once_by_the_chief(monkeypatch):
    # the CLI sets TF_CONFIG in this process: setenv records it, so teardown removes it
    # (delenv of an unset variable records nothing, and it leaked into later tests)
    monkeypatch.setenv("TF_CONFIG", "")
    hosts = "--worker_hosts=192.0.2.7:2222,192.0.2.8:2222"  # TEST-NET: never reached
    # a missing argument ends each run before any server starts
    chief = mlbench_here("train", hosts, "--task_index=0", "--model=mlp")
    assert chief.returncode == 2 and "needs" in chief.stderr
    assert chief.stderr.count("must be private to the job") == 1
    assert "(192.0.2.7:2222, 192.0.2.8:2222)" in chief.stderr
    other = mlbench_here("train", hosts, "--task_index=1", "--model=mlp")
    assert other.returncode == 2 and "must be private" not in other.stderr
    local = mlbench_here("train", f"--worker_hosts=127.0.0.1:{free_port()},127.0.0.1:"
                         f"{free_port()}", "--task_index=0", "--model=mlp")
    assert local.returncode == 2 and "must be private" not in local.stderr


def test_the_host_list_test_leaves_no_tf_config_behind():
    """Runs after the test above in the same process (pytest keeps a file's order)."""
    import os
    assert "TF_CONFIG" not in os.environ
