"""Two overheads that must stay small, measured side by side (issue 14):

- gradient accumulation: k=2 micro-batches vs k=1 at the same global batch (target ≤ 5 %);
- precision='auto' vs the best explicit precision (target within 5 %).

    .venv/bin/python benchmarks/overheads.py [model] [global_batch] [steps] [rounds]

Each configuration runs in its own process (`mlbench.train`, synthetic on-device data,
SGD, examples/sec with the compile step excluded), alternating for `rounds` rounds; the
medians and ratios are printed. Never asserted in tests: these machines are shared.
"""
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_PY = os.path.join(ROOT, ".venv", "bin", "python")
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
TRAIN = ("import mlbench,sys; m,b,s,p,k=sys.argv[1:6]; r=mlbench.train(model=m, "
         "data='synthetic', global_batch_size=int(b), train_steps=1+int(s), "
         "steps_per_loop=int(s), precision=p, gradient_accumulation_steps=int(k), "
         "verbose=False); print('RATE', r.examples_per_second, r.ran['precision'])")


def rate(model, batch, steps, precision, k):
    out = subprocess.run([VENV_PY, "-c", TRAIN, model, str(batch), str(steps), precision,
                          str(k)], env=ENV, capture_output=True, text=True, check=True).stdout
    return float(re.search(r"RATE ([0-9.]+)", out).group(1))


def main(model="resnet50", batch=32, steps=10, rounds=2):
    batch, steps, rounds = int(batch), int(steps), int(rounds)
    runs = {"bf16 k=1": ("mixed_bfloat16", 1), "bf16 k=2": ("mixed_bfloat16", 2),
            "float32 k=1": ("float32", 1), "auto k=1": ("auto", 1)}
    rates = {name: [] for name in runs}
    for _ in range(rounds):
        for name, (precision, k) in runs.items():
            rates[name].append(rate(model, batch, steps, precision, k))
            print(f"{name}: {rates[name][-1]:.2f} examples/sec", flush=True)
    med = {name: statistics.median(v) for name, v in rates.items()}
    print(f"\n{model}, global batch {batch}, {steps} timed steps, median of {rounds} rounds:")
    for name, value in med.items():
        print(f"  {name}: {value:.2f} examples/sec")
    print(f"  accumulation overhead (bf16 k=2 vs k=1): {1 - med['bf16 k=2'] / med['bf16 k=1']:.1%}")
    best = max(med["bf16 k=1"], med["float32 k=1"])
    print(f"  auto / best explicit: {med['auto k=1'] / best:.3f}")


if __name__ == "__main__":
    main(*sys.argv[1:])
