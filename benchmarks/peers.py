"""mlbench's training throughput beside its peers, in one run: ResNet-50 and BERT-base.

    python3 -m venv .peer-venv && .peer-venv/bin/pip install torch==2.13.0 numpy   # once
    .venv/bin/python benchmarks/peers.py resnet [batch] [steps] [rounds]
    .venv/bin/python benchmarks/peers.py bert [batch] [steps] [rounds]
    TF_CNN_BENCHMARKS=<checkout>/scripts/tf_cnn_benchmarks .venv/bin/python benchmarks/peers.py resnet ...

With TF_CNN_BENCHMARKS set (a checkout of github.com/tensorflow/benchmarks, not
committed here), tf_cnn_benchmarks' own ResNet-50 (v1, NHWC, parameter_server on the
CPU, run with TF_USE_LEGACY_KERAS=1 on the same TF 2.20) joins the ResNet rounds.

BERT: mlbench `bert_base` (seq 128, 20 masked positions, AdamW, synthetic on-device
data, `mlbench.train`'s examples/sec with the compile step excluded) with the masked-LM
head in bf16 and in float32, beside the PyTorch peer (peers/torch_bert.py, bf16
autocast, AdamW), alternating.

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
PEERS = os.path.join(ROOT, "benchmarks", "peers")  # the reference peers, kept in the repository
VENV_PY = os.path.join(ROOT, ".venv", "bin", "python")
PEER_PY = os.path.join(ROOT, ".peer-venv", "bin", "python")
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}

MLBENCH = ("import mlbench,sys; r=mlbench.benchmark(sys.argv[1], batch_size=int(sys.argv[2]), "
           "precision=sys.argv[3], variable_update='replicated', num_warmup_batches=3, "
           "num_batches=int(sys.argv[4]), num_runs=1, verbose=False); "
           "print('MLBENCH', r.images_per_sec.mean)")


def _number(text, pattern):
    match = re.search(pattern, text)
    if not match:
        raise RuntimeError(f"no figure in output:\n{text[-2000:]}")
    return float(match.group(1))


def figure(command, pattern, cwd=None, env=None):
    """Runs `command` in its own process and returns the number `pattern` finds in its output."""
    out = subprocess.run([str(c) for c in command], cwd=cwd, env=env or ENV,
                         capture_output=True, text=True, check=True).stdout
    return _number(out, pattern)


def mlbench_rate(model, batch, precision, steps):
    return figure([VENV_PY, "-c", MLBENCH, model, batch, precision, steps], r"MLBENCH ([0-9.]+)")


def peer_rate(python, script, precision, batch, steps):
    return figure([python, os.path.join(PEERS, script), precision, batch, steps],
                  r": ([0-9.]+) images/sec")


def tf_cnn_rate(checkout, precision, batch, steps):
    """tf_cnn_benchmarks' `total images/sec` for ResNet-50 (v1) on the CPU."""
    flags = ["--model=resnet50", f"--batch_size={batch}", f"--num_batches={steps}",
             "--num_warmup_batches=3", "--device=cpu", "--data_format=NHWC",
             "--variable_update=parameter_server", "--local_parameter_device=cpu",
             "--num_gpus=1"] + (["--use_fp16"] if precision != "float32" else [])
    return figure([VENV_PY, "tf_cnn_benchmarks.py", *flags], r"total images/sec: ([0-9.]+)",
                  cwd=checkout, env={**ENV, "TF_USE_LEGACY_KERAS": "1"})


def configurations(batch, steps):
    runs = {}
    checkout = os.environ.get("TF_CNN_BENCHMARKS")
    if checkout:
        runs["tf_cnn_benchmarks ResNet-50 v1 float32"] = lambda: tf_cnn_rate(
            checkout, "float32", batch, steps)
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


BERT = ("import mlbench,sys; r=mlbench.train(model='bert_base', data='synthetic', "
        "global_batch_size=int(sys.argv[1]), train_steps=1+int(sys.argv[2]), "
        "steps_per_loop=int(sys.argv[2]), precision='mixed_bfloat16', optimizer='adamw', "
        "learning_rate=1e-4, model_options={'max_sequence_length': 128, "
        "'head_dtype': sys.argv[3]}, verbose=False); print('MLBENCH', r.examples_per_second)")


def bert_rate(batch, steps, head_dtype):
    return figure([VENV_PY, "-c", BERT, batch, steps, head_dtype], r"MLBENCH ([0-9.]+)")


def torch_bert_rate(batch, steps):
    return figure([PEER_PY, os.path.join(PEERS, "torch_bert.py"), "bf16", batch, steps, "base"],
                  r": ([0-9.]+) sequences/sec")


def bert_main(batch=16, steps=5, rounds=2):
    runs = {"mlbench bert_base bf16, bf16 head": lambda: bert_rate(batch, steps, "compute"),
            "mlbench bert_base bf16, float32 head": lambda: bert_rate(batch, steps, "float32"),
            "torch BERT-base bf16 autocast": lambda: torch_bert_rate(batch, steps)}
    medians = alternate(runs, rounds, "sequences/sec")
    print(f"\nbatch {batch}, {steps} timed steps, median of {rounds} alternating rounds:")
    for name, value in medians.items():
        print(f"  {name}: {value:.2f} sequences/sec")
    peer = medians["torch BERT-base bf16 autocast"]
    for name in list(runs)[:2]:
        print(f"  ratio {name} / torch: {medians[name] / peer:.3f}")


def alternate(runs, rounds, unit):
    rates = {name: [] for name in runs}
    for _ in range(rounds):
        for name, fn in runs.items():
            rates[name].append(fn())
            print(f"{name}: {rates[name][-1]:.2f} {unit}", flush=True)
    return {name: statistics.median(v) for name, v in rates.items()}


def main(batch=32, steps=10, rounds=2):
    medians = alternate(configurations(batch, steps), rounds, "images/sec")
    print(f"\nbatch {batch}, {steps} timed steps, median of {rounds} alternating rounds:")
    for name, value in medians.items():
        print(f"  {name}: {value:.2f} images/sec")
    for policy, torch_name in (("mixed_bfloat16", "bf16"), ("float32", "fp32")):
        v1 = medians[f"mlbench resnet50_v1 {policy}"] / medians[f"tf_keras fit ResNet50 v1 {policy}"]
        print(f"  ratio mlbench/tf_keras-fit (ResNet50 v1, {policy}): {v1:.3f}")
        tf_cnn = medians.get("tf_cnn_benchmarks ResNet-50 v1 float32")
        if tf_cnn:
            print(f"  ratio mlbench resnet50_v1 {policy} / tf_cnn_benchmarks float32: "
                  f"{medians[f'mlbench resnet50_v1 {policy}'] / tf_cnn:.3f}")
        torch_key = f"torch ResNet-50 v1.5 {torch_name}"
        if torch_key in medians:
            ratio = medians[f"mlbench resnet50 (v1.5) {policy}"] / medians[torch_key]
            print(f"  ratio mlbench/torch (ResNet-50 v1.5, {policy} vs {torch_name}): {ratio:.3f}")


if __name__ == "__main__":
    kind = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].isdigit() else "resnet"
    numbers = [int(a) for a in sys.argv[1:] if a.isdigit()]
    (bert_main if kind == "bert" else main)(*numbers)
