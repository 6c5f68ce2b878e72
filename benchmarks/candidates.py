"""Speed candidates, each A/B'd side by side in one sitting.

    .venv/bin/python benchmarks/candidates.py resnet [batch] [steps] [rounds]
    .venv/bin/python benchmarks/candidates.py bert [batch] [steps] [rounds]

resnet (float32 and bf16, benchmark mode): `resnet50_v1` as mlbench builds it (no conv
biases before batch norm) vs tf_keras.applications' ResNet50 with its biases, and the
bias-free model with TF_NUM_INTEROP_THREADS=1 (one op at a time, all cores inside it).
bert (bf16, AdamW, `mlbench.train`): steps_per_loop = steps vs 1, and
TF_NUM_INTEROP_THREADS=1. Each configuration runs in its own process, alternating; the
medians and each candidate's effect are printed. Never asserted in tests.
"""
import sys

from peers import ENV, VENV_PY, alternate, figure  # this folder's side-by-side helpers

RESNET = ("import sys, mlbench; from mlbench.models import registry, vision; "
          "import tf_keras as k; registry.register(registry.ModelInfo('resnet50_v1_biased', "
          "vision.application(k.applications.ResNet50, {'default': 224, 'min': 32}), "
          "(224, 224, 3), 'image', 'tf_keras.applications', 7.7)); "
          "r = mlbench.benchmark(sys.argv[1], batch_size=int(sys.argv[2]), precision=sys.argv[3], "
          "variable_update='replicated', num_warmup_batches=3, num_batches=int(sys.argv[4]), "
          "num_runs=1, verbose=False); print('RATE', r.images_per_sec.mean)")
BERT = ("import sys, mlbench; b, s, spl = map(int, sys.argv[1:4]); r = mlbench.train("
        "model='bert_base', data='synthetic', global_batch_size=b, train_steps=1 + s, "
        "steps_per_loop=spl, precision='mixed_bfloat16', optimizer='adamw', "
        "learning_rate=1e-4, model_options={'max_sequence_length': 128}, verbose=False); "
        "print('RATE', r.examples_per_second)")
ONE_OP_AT_A_TIME = {**ENV, "TF_NUM_INTEROP_THREADS": "1"}


def rate(program, args, env=ENV):
    return figure([VENV_PY, "-c", program, *args], r"RATE ([0-9.]+)", env=env)


def resnet_runs(batch, steps):
    runs = {}
    for policy in ("float32", "mixed_bfloat16"):
        for model in ("resnet50_v1", "resnet50_v1_biased"):
            runs[f"{model} {policy}"] = lambda m=model, p=policy: rate(
                RESNET, [m, batch, p, steps])
        runs[f"resnet50_v1 {policy} inter-op 1"] = lambda p=policy: rate(
            RESNET, ["resnet50_v1", batch, p, steps], ONE_OP_AT_A_TIME)
    return runs


def bert_runs(batch, steps):
    return {"steps_per_loop=steps": lambda: rate(BERT, [batch, steps, steps]),
            "steps_per_loop=1": lambda: rate(BERT, [batch, steps, 1]),
            "steps_per_loop=steps, inter-op 1": lambda: rate(
                BERT, [batch, steps, steps], ONE_OP_AT_A_TIME)}


def main(kind="resnet", batch=None, steps=None, rounds=2):
    batch = batch or (32 if kind == "resnet" else 16)
    steps = steps or (6 if kind == "resnet" else 5)
    runs = (resnet_runs if kind == "resnet" else bert_runs)(batch, steps)
    medians = alternate(runs, rounds, "examples/sec")
    print(f"\n{kind}, batch {batch}, {steps} timed steps, median of {rounds} rounds:")
    for name, value in medians.items():
        print(f"  {name}: {value:.2f} examples/sec")
    if kind == "resnet":
        for policy in ("float32", "mixed_bfloat16"):
            base = medians[f"resnet50_v1 {policy}"]
            print(f"  {policy}: bias-free / biased {base / medians[f'resnet50_v1_biased {policy}']:.3f}"
                  f", inter-op 1 / default {medians[f'resnet50_v1 {policy} inter-op 1'] / base:.3f}")
    else:
        base = medians["steps_per_loop=steps"]
        print(f"  steps_per_loop=1 / steps: {medians['steps_per_loop=1'] / base:.3f}, "
              f"inter-op 1 / default: {medians['steps_per_loop=steps, inter-op 1'] / base:.3f}")


if __name__ == "__main__":
    kind = sys.argv[1] if len(sys.argv) > 1 else "resnet"
    main(kind, *[int(a) for a in sys.argv[2:]])
