"""Two overheads that must stay small, measured side by side:

- gradient accumulation: k=2 micro-batches vs k=1 at the same global batch (target ≤ 5 %);
- precision='auto' vs the best explicit precision (target within 5 %).

    .venv/bin/python benchmarks/overheads.py [model] [global_batch] [steps] [rounds]

Each configuration runs in its own process (`mlbench.train`, synthetic on-device data,
SGD, examples/sec with the compile step excluded), alternating for `rounds` rounds; the
medians and ratios are printed. Never asserted in tests: these machines are shared.
"""
import sys

from peers import VENV_PY, alternate, figure  # this folder's side-by-side helpers

TRAIN = ("import mlbench,sys; m,b,s,p,k=sys.argv[1:6]; r=mlbench.train(model=m, "
         "data='synthetic', global_batch_size=int(b), train_steps=1+int(s), "
         "steps_per_loop=int(s), precision=p, gradient_accumulation_steps=int(k), "
         "verbose=False); print('RATE', r.examples_per_second, r.ran['precision'])")


def rate(model, batch, steps, precision, k):
    return figure([VENV_PY, "-c", TRAIN, model, batch, steps, precision, k], r"RATE ([0-9.]+)")


def main(model="resnet50", batch=32, steps=10, rounds=2):
    batch, steps, rounds = int(batch), int(steps), int(rounds)
    configs = {"bf16 k=1": ("mixed_bfloat16", 1), "bf16 k=2": ("mixed_bfloat16", 2),
               "float32 k=1": ("float32", 1), "auto k=1": ("auto", 1)}
    runs = {name: (lambda p=p, k=k: rate(model, batch, steps, p, k))
            for name, (p, k) in configs.items()}
    med = alternate(runs, rounds, "examples/sec")
    print(f"\n{model}, global batch {batch}, {steps} timed steps, median of {rounds} rounds:")
    for name, value in med.items():
        print(f"  {name}: {value:.2f} examples/sec")
    print(f"  accumulation overhead (bf16 k=2 vs k=1): {1 - med['bf16 k=2'] / med['bf16 k=1']:.1%}")
    best = max(med["bf16 k=1"], med["float32 k=1"])
    print(f"  auto / best explicit: {med['auto k=1'] / best:.3f}")


if __name__ == "__main__":
    main(*sys.argv[1:])
