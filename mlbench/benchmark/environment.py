"""The environment block of a benchmark report, and the device's peak FLOP/s."""
import datetime
import os
import platform
import subprocess

import tensorflow as tf

from mlbench import precision as precision_lib

# Dense peak FLOP/s of common accelerators (vendor data sheets), by precision class.
GPU_PEAK_TFLOPS = {
    "P100": {"float32": 10.6, "half": 21.2}, "V100": {"float32": 15.7, "half": 125.0},
    "A100": {"float32": 19.5, "half": 312.0}, "H100": {"float32": 67.0, "half": 989.0},
    "K80": {"float32": 4.4, "half": 4.4},
}


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _cpu_ghz():
    try:
        with open("/proc/cpuinfo") as f:
            mhz = [float(line.split(":")[1]) for line in f if line.startswith("cpu MHz")]
        return max(mhz) / 1000 if mhz else 2.0
    except OSError:
        return 2.0


def cpu_peak_flops(policy):
    """Cores × GHz × FLOPs/cycle — a stated, not measured, peak.

    FLOPs/cycle: 64 for AVX-512 float32 (2 FMA units × 16 lanes × 2); 128 for
    AVX512-BF16 dot products (twice the float32 rate); 1024 for AMX bf16 tiles;
    32 for AVX2 float32.
    """
    flags = precision_lib.cpu_flags()
    bf16 = policy == "mixed_bfloat16"
    if bf16 and "amx_bf16" in flags:
        per_cycle = 1024
    elif bf16 and "avx512_bf16" in flags:
        per_cycle = 128
    elif "avx512f" in flags:
        per_cycle = 64
    else:
        per_cycle = 32
    return (os.cpu_count() or 1) * _cpu_ghz() * 1e9 * per_cycle, per_cycle


def peak_flops(policy, num_devices):
    """(peak FLOP/s of the devices used, how it was derived)."""
    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        name = tf.config.experimental.get_device_details(gpus[0]).get("device_name", "")
        kind = "float32" if policy == "float32" else "half"
        for key, peaks in GPU_PEAK_TFLOPS.items():
            if key in name:
                return peaks[kind] * 1e12 * num_devices, f"{num_devices}× {key} {kind} data sheet"
        return None, f"unknown GPU {name!r}"
    peak, per_cycle = cpu_peak_flops(policy)
    return peak, (f"{os.cpu_count()} cores × {_cpu_ghz():.2f} GHz (nominal) × {per_cycle} "
                  f"FLOPs/cycle; boost clocks can put MFU above 100 %; logical CPU devices "
                  f"share it")


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
        "machine": platform.node(), "cpu": _cpu_model(), "cpu_cores": os.cpu_count(),
        "accelerator": accel, "os": platform.platform(),
        "tensorflow": f"{tf.__version__} (git {tf.version.GIT_VERSION})",
        "mlbench_git": _git_hash(),
        "cuda_cudnn (TF build)": f"{build.get('cuda_version', 'n/a')} / {build.get('cudnn_version', 'n/a')}",
        "date": datetime.date.today().isoformat(),
    }
