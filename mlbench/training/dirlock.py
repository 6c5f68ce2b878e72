"""One writer per model_dir: a train or MLPerf run holds an exclusive lock on its
directory for its whole life.

The lock is `fcntl.flock` on `model_dir/.lock`, which the kernel releases when the holder
exits however it exits (SIGKILL included); the file also says who holds it (pid, host,
start time) so that a second writer is refused by name. A file that names a holder but
is not locked was left by a process that died: the next run takes it over and says so.
Readers (evaluate, report, compare, the sidecar) take no lock.

What it cannot promise: on network file systems (NFS, some FUSE mounts) `flock` may be
local to one machine or a no-op, so two hosts can each believe they hold it; give each
job its own model_dir there.
"""
import contextlib
import datetime
import fcntl
import json
import os
import socket

FILE = ".lock"


class RunDirectoryBusy(ValueError):
    """Another live process writes to this model_dir (exit 2, nothing written)."""


@contextlib.contextmanager
def held(model_dir, log=None):
    """Holds `model_dir`'s lock for the block; RunDirectoryBusy when another process does."""
    path = os.path.join(model_dir, FILE)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunDirectoryBusy(busy_message(model_dir, _read(descriptor))) from None
        left = _read(descriptor)
        if left and log:
            log(f"took over the lock of {model_dir} left by {holder_text(left)}, which "
                "no longer runs")
        _write(descriptor, {"pid": os.getpid(), "host": socket.gethostname(),
                            "started": datetime.datetime.now().isoformat(timespec="seconds")})
        try:
            yield
        finally:
            _write(descriptor, None)  # empty: released cleanly, nothing to take over
            fcntl.flock(descriptor, fcntl.LOCK_UN)
    finally:
        os.close(descriptor)


def busy_message(model_dir, found):
    return (f"`model_dir` ({model_dir!r}) is in use by {holder_text(found)}: one run writes "
            "to a model_dir at a time; wait for it, stop it, or give another model_dir.")


def holder(model_dir):
    """{'pid', 'host', 'started'} of the process holding `model_dir`, or None."""
    path = os.path.join(model_dir, FILE)
    if not os.path.exists(path):
        return None
    descriptor = os.open(path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read(descriptor) or {}
        fcntl.flock(descriptor, fcntl.LOCK_UN)
        return None
    finally:
        os.close(descriptor)


def _read(descriptor):
    os.lseek(descriptor, 0, os.SEEK_SET)
    text = os.read(descriptor, 4096).decode(errors="replace").strip()
    try:
        return json.loads(text) if text else None
    except ValueError:
        return {"unreadable": text[:80]}


def _write(descriptor, value):
    os.ftruncate(descriptor, 0)
    os.lseek(descriptor, 0, os.SEEK_SET)
    if value is not None:
        os.write(descriptor, json.dumps(value).encode())
    os.fsync(descriptor)


def holder_text(found):
    """'pid N on HOST (started T)' of a lock file's holder."""
    if not found or "pid" not in found:
        return "another process"
    return f"pid {found['pid']} on {found.get('host', '?')} (started {found.get('started', '?')})"
