"""Run files written atomically: a temporary file in the same directory, then a rename.

A run killed mid-write (SIGKILL, a full disk, a preempted node) leaves the previous
version of the file, never half of a new one: `os.replace` is atomic on POSIX.
"""
import json
import os
import tempfile


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text(path, text):
    """Writes `text` to `path` atomically."""
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path),
                                         suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as f:
            f.write(text)
        # mkstemp creates 0600; a run's files get the mode open() would give them
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise


def write_json(path, value, indent=2):
    """Writes `value` as JSON to `path` atomically (values JSON cannot hold as strings)."""
    write_text(path, json.dumps(value, indent=indent, default=str))


def refuse_earlier_results(directory, names, argument):
    """Raises before any work if `directory` already holds one of the result files `names`:
    a measurement is never overwritten by the next one (re-running a command must not wipe
    what it wrote the first time)."""
    found = [n for n in names if directory and os.path.exists(os.path.join(directory, n))]
    if found:
        raise ValueError(f"`{argument}` ({directory!r}) already holds {', '.join(found)} of "
                         "an earlier run; mlbench never overwrites a result. Give a new "
                         "directory (or move the old one away).")
