"""Facts about this machine, read once: CPU model and feature flags, accelerators, versions.

One neutral module that precision (bf16 speed), benchmark mode (peak FLOP/s), the
MLPerf system description and reports all read; it imports no other part of mlbench
and imports TensorFlow only when asked for the accelerator or the full environment.
"""
import datetime
import functools
import os
import platform
import subprocess


@functools.lru_cache(maxsize=1)
def _cpu():
    """{'model': str, 'flags': frozenset} from /proc/cpuinfo's first processor.

    /proc/cpuinfo is read directly on Linux (instant); elsewhere py-cpuinfo (installed
    with the stack) answers, at the cost of the subprocess it starts."""
    model, flags = None, frozenset()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and model is None:
                    model = value.strip()
                elif key == "flags" and not flags:
                    flags = frozenset(value.split())
                if model and flags:
                    break
    except OSError:
        model, flags = _cpu_from_py_cpuinfo()
    return {"model": model or platform.processor() or "unknown", "flags": flags}


def _cpu_from_py_cpuinfo():
    try:
        import cpuinfo
        info = cpuinfo.get_cpu_info()
        return info.get("brand_raw"), frozenset(info.get("flags", ()))
    except Exception:  # noqa: BLE001 - a missing fact is "unknown", never an error
        return None, frozenset()


def cpu_model():
    return _cpu()["model"]


def cpu_flags():
    """The CPU's feature flags (empty when they cannot be read)."""
    return _cpu()["flags"]


def accelerators():
    """The accelerators TensorFlow sees, by device name ('none (CPU)' when there are none)."""
    import tensorflow as tf
    gpus = tf.config.list_physical_devices("GPU")
    return ", ".join(tf.config.experimental.get_device_details(g).get("device_name", "GPU")
                     for g in gpus) or "none (CPU)"


def _git_hash():
    try:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root,
                              capture_output=True, text=True, timeout=5).stdout.strip() or "n/a"
    except (OSError, subprocess.SubprocessError):
        return "n/a"


def environment():
    """The environment block of a report (the benchmarks page's layout) for this machine."""
    import tensorflow as tf
    build = tf.sysconfig.get_build_info()
    cuda = f"{build.get('cuda_version', 'n/a')} / {build.get('cudnn_version', 'n/a')}"
    return {
        "machine": platform.node(), "cpu": cpu_model(), "cpu_cores": os.cpu_count(),
        "accelerator": accelerators(), "os": platform.platform(),
        "tensorflow": f"{tf.__version__} (git {tf.version.GIT_VERSION})",
        "mlbench_git": _git_hash(),
        "cuda_cudnn (TF build)": cuda,
        "date": datetime.date.today().isoformat(),
    }
