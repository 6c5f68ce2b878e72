"""The devices' peak FLOP/s for model-FLOPs utilisation: measured on CPUs, data sheets on GPUs.

A CPU's peak is not its nominal clock × FLOPs/cycle (boost clocks, AMX vs
AVX512-BF16 and shared cores make that wrong by 2× either way): mlbench
measures it once per machine with a matmul microbenchmark per precision (a
few seconds) and caches the figure under the user cache directory, keyed by
CPU model, core count, TensorFlow version and precision. Every report says the
figure and how it was obtained. GPUs use published dense peaks.
"""
import json
import os
import platform
import time

import tensorflow as tf

from mlbench.machine import cpu_model
from mlbench.files import write_json

# Dense (no sparsity) peak TFLOP/s from vendor data sheets: float32 (CUDA cores), tf32 and
# half (fp16/bf16 tensor cores). SXM parts where there are several.
GPU_PEAK_TFLOPS = {
    "K80": {"float32": 4.4, "tf32": 4.4, "half": 4.4},
    "P100": {"float32": 10.6, "tf32": 10.6, "half": 21.2},
    "V100": {"float32": 15.7, "tf32": 15.7, "half": 125.0},
    "T4": {"float32": 8.1, "tf32": 8.1, "half": 65.0},
    "A100": {"float32": 19.5, "tf32": 156.0, "half": 312.0},
    "L4": {"float32": 30.3, "tf32": 60.0, "half": 121.0},
    "H100": {"float32": 67.0, "tf32": 494.7, "half": 989.4},
    "H200": {"float32": 67.0, "tf32": 494.7, "half": 989.4},
}
MATMUL_SIZE = 2048
MIN_SECONDS = 0.5  # per precision, after one warm-up call


def cache_path():
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(root, "mlbench", "peak_flops.json")


def _machine_key(policy):
    return f"{cpu_model()}|{os.cpu_count()} cores|TF {tf.__version__}|{policy}"


def _compute_dtype(policy):
    return {"mixed_bfloat16": tf.bfloat16, "mixed_float16": tf.float16}.get(policy, tf.float32)


def measure_matmul_flops(policy, size=MATMUL_SIZE, min_seconds=MIN_SECONDS):
    """FLOP/s of size×size matmuls in the policy's compute dtype, all cores, graph mode."""
    dtype = _compute_dtype(policy)
    a = tf.cast(tf.random.stateless_uniform((size, size), seed=[1, 2]), dtype)
    b = tf.cast(tf.random.stateless_uniform((size, size), seed=[3, 4]), dtype)

    @tf.function
    def chain(n):
        total = tf.zeros((), tf.float32)
        for _ in tf.range(n):
            total += tf.cast(tf.linalg.matmul(a, b)[0, 0], tf.float32)
        return total

    float(chain(tf.constant(1)))  # trace and warm up
    reps = 1
    while True:
        start = time.perf_counter()
        float(chain(tf.constant(reps)))
        seconds = time.perf_counter() - start
        if seconds >= min_seconds:
            return 2.0 * size ** 3 * reps / seconds
        reps *= 2


TRIES = 3  # a peak is the best of several tries: other jobs on a shared machine only lower it


def measured_cpu_peak(policy, refresh=False):
    """(FLOP/s, how measured): from the cache, else measured now (the best of TRIES, with
    the machine's load at the time) and cached; beside it the data-sheet-style figure."""
    path, key = cache_path(), _machine_key(policy)
    cache = {}
    if os.path.exists(path):
        with open(path) as f:
            cache = json.load(f)
    if refresh or key not in cache:
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        flops = max(measure_matmul_flops(policy) for _ in range(TRIES))
        cache[key] = {"flops": max(flops, cache.get(key, {}).get("flops", 0.0)),
                      "measured": time.strftime("%Y-%m-%d %H:%M"), "host": platform.node(),
                      "load_average": load, "tries": TRIES}
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_json(path, cache, indent=1)
    entry = cache[key]
    dtype = _compute_dtype(policy).name
    load = entry.get("load_average")
    how = (f"measured {entry['flops'] / 1e9:.0f} GFLOP/s: best of {entry.get('tries', 1)} "
           f"tries of {MATMUL_SIZE}² {dtype} matmuls on all {os.cpu_count()} cores, "
           f"{entry['measured']}" + (f" at load average {load:.1f}" if load is not None else "")
           + f" (cached in {path}); logical CPU devices share it")
    nominal = nominal_cpu_peak(policy)
    if nominal:
        how += f"; data-sheet style: {nominal[1]}"
    return entry["flops"], how


def nominal_cpu_peak(policy):
    """(FLOP/s, how) as a data sheet would state it: cores × clock × FLOPs per cycle from
    the CPU's vector flags (two FMA units), or None when the clock is not readable. An
    upper bound that boost clocks, AMX and shared cores make wrong either way: shown
    beside the measured peak, never used for MFU."""
    from mlbench.machine import cpu_flags
    mhz = _cpu_mhz()
    if not mhz:
        return None
    flags = cpu_flags()
    lanes = 16 if "avx512f" in flags else 8 if "avx2" in flags else 4
    if policy != "float32" and ("avx512_bf16" in flags or "amx_bf16" in flags):
        lanes *= 2
    per_cycle = 2 * 2 * lanes  # two FMA units, two FLOPs per multiply-add
    flops = os.cpu_count() * mhz * 1e6 * per_cycle
    return flops, (f"{os.cpu_count()} cores × {mhz / 1000:.2f} GHz × {per_cycle} FLOP/cycle "
                   f"= {flops / 1e9:.0f} GFLOP/s")


def _cpu_mhz():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("cpu MHz"):
                    return float(line.split(":", 1)[1])
    except (OSError, ValueError):
        return None
    return None


def peak_flops(policy, num_devices):
    """(peak FLOP/s of the devices used or None, how it was obtained)."""
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return measured_cpu_peak(policy)
    name = tf.config.experimental.get_device_details(gpus[0]).get("device_name", "")
    kind = "half" if policy != "float32" else (
        "tf32" if tf.config.experimental.tensor_float_32_execution_enabled() else "float32")
    for key, peaks in GPU_PEAK_TFLOPS.items():
        if key in name:
            return (peaks[kind] * 1e12 * num_devices,
                    f"{num_devices}× {key} {kind} dense peak (data sheet)")
    return None, f"no published peak for GPU {name!r}: MFU not computed"


def utilisation(achieved_flops, peak, how, remeasure=None):
    """(MFU or None, how): never above 100 % — that would mean the peak is wrong. A run
    that beat a measured peak (measured while the machine was busy, say) has it measured
    again (`remeasure()` -> (peak, how)) before the figure is withheld."""
    if not peak:
        return None, how
    if achieved_flops > peak and remeasure is not None:
        peak, how = remeasure()
        how += " (measured again: a run beat the cached figure)"
    mfu = achieved_flops / peak
    if mfu > 1.0:
        return None, how + f"; MFU not shown: {mfu:.0%} of this peak means the peak is too low"
    return mfu, how
