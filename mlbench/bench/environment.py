"""The environment block of a benchmark report."""
import datetime
import os
import platform
import subprocess

import tensorflow as tf


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _git_hash():
    try:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root,
                              capture_output=True, text=True, timeout=5).stdout.strip() or "n/a"
    except (OSError, subprocess.SubprocessError):
        return "n/a"


def environment():
    """The page's environment block for this machine."""
    build = tf.sysconfig.get_build_info()
    gpus = tf.config.list_physical_devices("GPU")
    accel = ", ".join(tf.config.experimental.get_device_details(g).get("device_name", "GPU")
                      for g in gpus) or "none (CPU)"
    return {
        "machine": platform.node(), "cpu": cpu_model(), "cpu_cores": os.cpu_count(),
        "accelerator": accel, "os": platform.platform(),
        "tensorflow": f"{tf.__version__} (git {tf.version.GIT_VERSION})",
        "mlbench_git": _git_hash(),
        "cuda_cudnn (TF build)": f"{build.get('cuda_version', 'n/a')} / {build.get('cudnn_version', 'n/a')}",
        "date": datetime.date.today().isoformat(),
    }
