"""Peak memory of a step, reset per measurement: on a GPU, TensorFlow's allocator peak
(`tf.config.experimental.get_memory_info`); on a CPU, the process's resident high-water
mark (Linux's VmHWM, reset by writing 5 to /proc/self/clear_refs). Each figure says which
it is: a CPU's counts the whole process (TensorFlow, the model, the inputs), not one op.
"""
import os

GPU_PEAK = "GPU allocator peak (tf.config.experimental.get_memory_info), reset per cell"
CPU_PEAK = "process resident high-water mark (VmHWM), reset per cell"
CPU_PEAK_SINCE_START = "process resident high-water mark since the process started"
_CLEAR_REFS, _STATUS = "/proc/self/clear_refs", "/proc/self/status"


def _gpu():
    import tensorflow as tf
    return "GPU:0" if tf.config.list_logical_devices("GPU") else None


def reset_peak():
    """Starts a new peak; returns what the peak that follows measures."""
    gpu = _gpu()
    if gpu:
        import tensorflow as tf
        tf.config.experimental.reset_memory_stats(gpu)
        return GPU_PEAK
    try:
        with open(_CLEAR_REFS, "w") as f:
            f.write("5")  # resets VmHWM to the current resident size (Linux >= 4.0)
        return CPU_PEAK
    except OSError:
        return CPU_PEAK_SINCE_START


def peak_mb():
    """The peak since `reset_peak` (MiB), or None where it cannot be read."""
    gpu = _gpu()
    if gpu:
        import tensorflow as tf
        return tf.config.experimental.get_memory_info(gpu)["peak"] / 2 ** 20
    return resident_mb(os.getpid(), "VmHWM")


def resident_mb(pid, field="VmRSS"):
    """A process's resident memory (or its high-water mark, VmHWM) in MiB; None when
    /proc cannot say (not Linux, or the process is gone)."""
    path = _STATUS if pid == os.getpid() else f"/proc/{pid}/status"
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        return None
    return None


def available_mb():
    """Memory the machine can still give (MemAvailable, MiB): the default budget."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None
