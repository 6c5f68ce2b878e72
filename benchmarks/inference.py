"""mlbench's inference beside PyTorch's, in one run: ResNet-50 v1.5 and BERT-base (seq 128).

    python3 -m venv .peer-venv && .peer-venv/bin/pip install torch==2.13.0 numpy   # once
    .venv/bin/python benchmarks/inference.py [resnet50|bert_base ...] [--rounds N]

Per model, each in its own process, alternating for `rounds` rounds (median shown):
- mlbench: `mlbench.infer(model)` at batch 1 (p50, p99 of at least 100 batches and 3 s)
  and batch 32 (examples/sec, at least 10 batches and 5 s), precision `auto`;
- the served SavedModel (ResNet-50: the same zoo model saved with its serving signature
  and timed through `mlbench.infer(<dir>)`, as a server calls it);
- `mlbench.benchmark(model, forward_only=True)` at batch 32 (images/sec), which must
  agree with `infer` at the same batch;
- PyTorch 2.13 (peers/torch_inference.py): eager and `torch.compile`, bf16 autocast when
  `auto` picks bf16 here (else float32), `torch.inference_mode`, channels-last.
Ratios are mlbench / PyTorch's best mode per cell (higher examples/sec, lower latency).
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_PY = os.path.join(ROOT, ".venv", "bin", "python")
PEER_PY = os.path.join(ROOT, ".peer-venv", "bin", "python")
PEER = os.path.join(ROOT, "benchmarks", "peers", "torch_inference.py")
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
CELLS = {1: (100, 3.0), 32: (10, 5.0)}  # batch: (min batches, min seconds)

INFER = ("import mlbench,sys; r=mlbench.infer(sys.argv[1], batch_sizes=[int(sys.argv[2])], "
         "min_batches=int(sys.argv[3]), min_seconds=float(sys.argv[4]), verbose=False); "
         "w=r.rows[0]; print('MLBENCH', w.examples_per_sec, w.p50_ms, w.p99_ms, r.precision)")
FORWARD_ONLY = ("import mlbench,sys; r=mlbench.benchmark(sys.argv[1], batch_size=32, "
                "forward_only=True, num_warmup_batches=10, num_batches=10, num_runs=1, "
                "verbose=False); print('MLBENCH', r.images_per_sec.mean)")
SAVE = ("import sys; from mlbench import models; from mlbench.models import precision as p; "
        "from mlbench.plan import resolvers; info = models.resolve(sys.argv[1]); "
        "policy = resolvers.resolve_precision(info, 'auto'); "
        "ctx = p.policy_scope(policy); ctx.__enter__(); "
        "m = models.get(sys.argv[1], num_classes=1000); "
        "m.save(sys.argv[2], save_format='tf', include_optimizer=False); print('SAVED', policy)")


def _run(command, pattern):
    out = subprocess.run([str(c) for c in command], env=ENV, capture_output=True, text=True)
    match = re.search(pattern, out.stdout)
    if out.returncode or not match:
        raise RuntimeError(f"{command[:3]} failed:\n{out.stdout[-1500:]}{out.stderr[-1500:]}")
    return match


def mlbench_cell(model, batch):
    found = _run([VENV_PY, "-c", INFER, model, batch, *CELLS[batch]],
                 r"MLBENCH ([0-9.e+-]+) ([0-9.e+-]+) ([0-9.e+-]+) (\S+)")
    return tuple(float(found.group(i)) for i in (1, 2, 3))


def torch_cell(model, mode, batch):
    found = _run([PEER_PY, PEER, model, mode, batch, *CELLS[batch]],
                 r": ([0-9.]+) examples/sec p50 ([0-9.]+) ms p99 ([0-9.]+) ms")
    return tuple(float(found.group(i)) for i in (1, 2, 3))


def forward_only(model):
    return float(_run([VENV_PY, "-c", FORWARD_ONLY, model], r"MLBENCH ([0-9.]+)").group(1))


def configurations(model, saved, torch_precision):
    runs = {}
    for batch in CELLS:
        runs[f"mlbench {batch}"] = lambda b=batch: mlbench_cell(model, b)
        if saved:
            runs[f"served {batch}"] = lambda b=batch: mlbench_cell(saved, b)
        for compiled in ("", "-compile"):
            mode = torch_precision + compiled
            runs[f"torch {mode} {batch}"] = lambda b=batch, m=mode: torch_cell(model, m, b)
    runs["forward_only 32"] = lambda: (forward_only(model), None, None)
    return runs


def report(model, medians, torch_precision):
    print(f"\n{model}: median of the rounds (examples/sec; p50 / p99 ms at batch 1)")
    for name, (rate, p50, p99) in medians.items():
        tail = f", p50 {p50:.2f} ms, p99 {p99:.2f} ms" if p50 is not None else ""
        print(f"  {name}: {rate:.2f} examples/sec{tail}")
    for batch in CELLS:
        peers = [medians[f"torch {torch_precision}{c} {batch}"] for c in ("", "-compile")]
        ours = medians[f"mlbench {batch}"]
        if batch == 1:
            best = min(p[1] for p in peers), min(p[2] for p in peers)
            print(f"  batch 1: p50 torch-best / mlbench {best[0] / ours[1]:.3f}, "
                  f"p99 {best[1] / ours[2]:.3f} (above 1: mlbench faster)")
        else:
            best = max(p[0] for p in peers)
            print(f"  batch {batch}: examples/sec mlbench / torch-best {ours[0] / best:.3f}")
    if "forward_only 32" in medians:
        print(f"  forward_only / infer at batch 32: "
              f"{medians['forward_only 32'][0] / medians['mlbench 32'][0]:.3f}")


def main(models=("resnet50", "bert_base"), rounds=1):
    if not os.path.exists(PEER_PY):
        raise SystemExit("no .peer-venv: python3 -m venv .peer-venv && .peer-venv/bin/pip "
                         "install torch==2.13.0 numpy")
    from mlbench.models import precision  # what `auto` picks here decides PyTorch's autocast
    torch_precision = "bf16" if precision.resolve_precision("auto") == "mixed_bfloat16" \
        else "fp32"
    for model in models:
        with tempfile.TemporaryDirectory() as folder:
            saved = None
            if model == "resnet50":  # one image input: a SavedModel `infer` can serve
                saved = os.path.join(folder, "saved")
                _run([VENV_PY, "-c", SAVE, model, saved], r"SAVED")
            runs = configurations(model, saved, torch_precision)
            results = {name: [] for name in runs}
            for _ in range(rounds):
                for name, run in runs.items():
                    results[name].append(run())
                    print(f"{model} {name}: {results[name][-1]}", flush=True)
            medians = {name: tuple(None if v[0] is None else statistics.median(v)
                                   for v in zip(*values)) for name, values in results.items()}
            report(model, medians, torch_precision)


if __name__ == "__main__":
    args = sys.argv[1:]
    rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args else 1
    names = [a for a in args if not a.startswith("--") and not a.isdigit()]
    main(tuple(names) or ("resnet50", "bert_base"), rounds)
