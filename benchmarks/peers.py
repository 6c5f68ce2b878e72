"""mlbench's ResNet-50 training throughput beside its peers, in one run.

    python3 -m venv .peer-venv && .peer-venv/bin/pip install torch==2.13.0 numpy   # once
    .venv/bin/python benchmarks/peers.py [batch] [steps] [rounds]

Runs, alternating, for `rounds` rounds: mlbench (`resnet50` v1.5 and
`resnet50_v1`, bf16 and float32, synthetic on-device data), the plain tf_keras
`model.fit` peer (ResNet50 v1) and the PyTorch peer (ResNet-50 v1.5, if
.peer-venv exists), each in its own process, and prints the median
images/sec of each and the ratios mlbench/peer for the same model and precision.
"""
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS = os.path.join(os.path.dirname(ROOT), "shared", "peers")
VENV_PY = os.path.join(ROOT, ".venv", "bin", "python")
PEER_PY = os.path.join(ROOT, ".peer-venv", "bin", "python")
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}

MLBENCH = ("import mlbench,sys; r=mlbench.benchmark(sys.argv[1], batch_size=int(sys.argv[2]), "
           "precision=sys.argv[3], variable_update='replicated', num_warmup_batches=3, "
           "num_batches=int(sys.argv[4]), num_runs=1, verbose=False); "
           "print('MLBENCH', r.images_per_sec['mean'])")


def _number(text, pattern):
    match = re.search(pattern, text)
    if not match:
        raise RuntimeError(f"no figure in output:\n{text[-2000:]}")
    return float(match.group(1))


def mlbench_rate(model, batch, precision, steps):
    out = subprocess.run([VENV_PY, "-c", MLBENCH, model, str(batch), precision, str(steps)],
                         env=ENV, capture_output=True, text=True, check=True).stdout
    return _number(out, r"MLBENCH ([0-9.]+)")


def peer_rate(python, script, precision, batch, steps):
    out = subprocess.run([python, os.path.join(PEERS, script), precision, str(batch), str(steps)],
                         env=ENV, capture_output=True, text=True, check=True).stdout
    return _number(out, r": ([0-9.]+) images/sec")


def configurations(batch, steps):
    runs = {}
    for policy, torch_name in (("mixed_bfloat16", "bf16"), ("float32", "fp32")):
        runs[f"mlbench resnet50 (v1.5) {policy}"] = lambda p=policy: mlbench_rate(
            "resnet50", batch, p, steps)
        runs[f"mlbench resnet50_v1 {policy}"] = lambda p=policy: mlbench_rate(
            "resnet50_v1", batch, p, steps)
        runs[f"tf_keras fit ResNet50 v1 {policy}"] = lambda p=policy: peer_rate(
            VENV_PY, "tfkeras_fit_resnet50.py", p, batch, steps)
        if os.path.exists(PEER_PY):
            runs[f"torch ResNet-50 v1.5 {torch_name}"] = lambda t=torch_name: peer_rate(
                PEER_PY, "torch_resnet50.py", t, batch, steps)
    return runs


def main(batch=32, steps=10, rounds=2):
    runs = configurations(batch, steps)
    rates = {name: [] for name in runs}
    for _ in range(rounds):
        for name, fn in runs.items():
            rates[name].append(fn())
            print(f"{name}: {rates[name][-1]:.2f} images/sec", flush=True)
    medians = {name: statistics.median(v) for name, v in rates.items()}
    print(f"\nbatch {batch}, {steps} timed steps, median of {rounds} alternating rounds:")
    for name, value in medians.items():
        print(f"  {name}: {value:.2f} images/sec")
    for policy, torch_name in (("mixed_bfloat16", "bf16"), ("float32", "fp32")):
        v1 = medians[f"mlbench resnet50_v1 {policy}"] / medians[f"tf_keras fit ResNet50 v1 {policy}"]
        print(f"  ratio mlbench/tf_keras-fit (ResNet50 v1, {policy}): {v1:.3f}")
        torch_key = f"torch ResNet-50 v1.5 {torch_name}"
        if torch_key in medians:
            ratio = medians[f"mlbench resnet50 (v1.5) {policy}"] / medians[torch_key]
            print(f"  ratio mlbench/torch (ResNet-50 v1.5, {policy} vs {torch_name}): {ratio:.3f}")


if __name__ == "__main__":
    main(*[int(a) for a in sys.argv[1:]])
