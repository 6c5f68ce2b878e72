"""A local launch in a network of its own: no door open to other hosts.

TensorFlow's gRPC server listens on every interface of its machine, takes no
credentials and runs the graphs it is sent (TensorFlow's security policy, "Running a
TensorFlow server"), and it cannot be told to bind 127.0.0.1 alone. So `mlbench launch`
runs its tasks inside a new user and network namespace (`unshare --user --map-root-user
--net`, which needs no privilege where the kernel allows unprivileged user namespaces):
inside, the only interface is a private loopback, so the tasks reach each other on
127.0.0.1 and nothing outside the namespace — another host, or another process of this
one — reaches them. Files, devices and the process tree are shared as before; the tasks
have no network beyond their own (data on network storage mounted by the kernel still
reads; a `gs://` or `s3://` path does not: give `--isolate_network=false` for those,
on a private network).
"""
import fcntl
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys

ENV = "MLBENCH_PRIVATE_NETWORK"  # set inside the namespace: the tasks' network is private
_UNSHARE = ("unshare", "--user", "--map-root-user", "--net", "--")
IFF_UP, SIOCGIFFLAGS, SIOCSIFFLAGS = 0x1, 0x8913, 0x8914


def inside():
    """Whether this process runs in the launch's private network namespace."""
    return os.environ.get(ENV) == "1"


def available():
    """Whether this machine lets an unprivileged process make the namespaces (util-linux's
    `unshare` present and the kernel allowing user namespaces)."""
    if shutil.which("unshare") is None:
        return False
    return subprocess.run([*_UNSHARE, "true"], capture_output=True).returncode == 0


def loopback_up():
    """Brings the namespace's loopback interface up (a new network namespace starts with
    it down), by the same ioctl `ip link set lo up` makes."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(s, SIOCGIFFLAGS, request)[:18])[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH", b"lo", flags | IFF_UP))


def run_inside(argv):
    """Runs `argv` (this launch again) in a new user and network namespace; its exit
    code. SIGINT and SIGTERM sent to this process are passed on to it."""
    child = subprocess.Popen([*_UNSHARE, *argv], env={**os.environ, ENV: "1"})
    previous = {s: signal.signal(s, lambda signum, _: child.send_signal(signum))
                for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        return child.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def relaunch_command(num_workers, num_ps, timeout_s, rest):
    """`python -m mlbench launch ...` with the same local launch settings."""
    return [sys.executable, "-m", "mlbench", "launch", f"--num_workers={num_workers}",
            f"--num_ps={num_ps}", f"--launch_timeout_s={timeout_s or 0}", "--", *rest]
