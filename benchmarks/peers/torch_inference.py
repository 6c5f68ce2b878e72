"""Peer reference: inference latency and throughput in PyTorch on the CPU, measured the
way `mlbench infer` measures: ResNet-50 v1.5 (channels-last) or BERT-base (seq 128, the
masked-LM and next-sentence heads), in eval mode under `torch.inference_mode`, bf16
autocast or float32, eager or `torch.compile` (Inductor's C++ CPU backend; compile time
in the warm-up batches). The models are the training peers' (torch_resnet50.py,
torch_bert.py).

Each batch is timed from the call to its outputs (a CPU forward returns when they are
computed); 10 warm-up batches untimed; then at least `min_batches` batches and
`min_seconds`. Percentiles nearest-rank (`sorted[ceil(p·n) − 1]`); examples/sec = examples
÷ the timed wall time.

Setup: python3 -m venv .peer-venv && .peer-venv/bin/pip install torch==2.13.0 numpy
Run:   .peer-venv/bin/python benchmarks/peers/torch_inference.py resnet50 bf16-compile 1 100 3
Prints one line:  PEER torch-infer <model> <mode> bs=<B>: <X> examples/sec p50 <ms> p99 <ms>
"""
import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_bert import Bert, P, S, V  # noqa: E402
from torch_resnet50 import resnet50  # noqa: E402

torch.manual_seed(0)
model_name, mode, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
min_batches, min_seconds = int(sys.argv[4]), float(sys.argv[5])
if model_name == "resnet50":
    model = resnet50().eval().to(memory_format=torch.channels_last)
    inputs = (torch.randn(batch, 3, 224, 224).to(memory_format=torch.channels_last),)
else:
    model = Bert("base").eval()
    inputs = (torch.randint(0, V, (batch, S)), torch.zeros(batch, S, dtype=torch.long),
              torch.ones(batch, S, dtype=torch.bool), torch.randint(0, S, (batch, P)))
forward = torch.compile(model) if mode.endswith("-compile") else model


def run_batch():
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16,
                                                enabled=mode.startswith("bf16")):
        return forward(*inputs)


for _ in range(10):
    run_batch()
latencies, start = [], time.perf_counter()
while True:
    begin = time.perf_counter()
    run_batch()
    end = time.perf_counter()
    latencies.append(end - begin)
    if len(latencies) >= min_batches and end - start >= min_seconds:
        break
wall = end - start
ordered = sorted(latencies)


def nearest_rank(p):
    return 1000 * ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


print(f"PEER torch-infer {model_name} {mode} bs={batch}: {batch * len(latencies) / wall:.2f} "
      f"examples/sec p50 {nearest_rank(50):.2f} ms p99 {nearest_rank(99):.2f} ms")
