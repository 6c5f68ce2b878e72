"""Peer reference: ResNet-50 v1.5 training throughput in PyTorch on the CPU.

A hand-written torchvision-equivalent ResNet-50 v1.5 (25,557,032 trainable
parameters), SGD with momentum, channels-last, optional bf16 autocast.
It is the side-by-side peer for mlbench's CPU training throughput.

Setup (PyTorch 2.13 CPU build, kept on these machines' disk):
    python3 -m venv .peer-venv && .peer-venv/bin/pip install torch==2.13.0 numpy
Run:
    .peer-venv/bin/python benchmarks/peers/torch_resnet50.py bf16 32 10
Modes: fp32 | bf16 (autocast) | fp32-compile | bf16-compile (torch.compile,
Inductor's C++ CPU backend; compile time excluded by the warm-up steps).
Prints one line:  PEER torch-ctl <mode> bs=<B>: <X> images/sec
"""
import sys, time, torch, torch.nn as nn
torch.manual_seed(0)
class Bottleneck(nn.Module):
    def __init__(s, cin, mid, stride):
        super().__init__(); cout = mid * 4
        s.c1 = nn.Conv2d(cin, mid, 1, bias=False); s.b1 = nn.BatchNorm2d(mid)
        s.c2 = nn.Conv2d(mid, mid, 3, stride, 1, bias=False); s.b2 = nn.BatchNorm2d(mid)
        s.c3 = nn.Conv2d(mid, cout, 1, bias=False); s.b3 = nn.BatchNorm2d(cout)
        s.down = None if (stride == 1 and cin == cout) else nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
        s.r = nn.ReLU(inplace=True)
    def forward(s, x):
        i = x if s.down is None else s.down(x)
        x = s.r(s.b1(s.c1(x))); x = s.r(s.b2(s.c2(x))); x = s.b3(s.c3(x))
        return s.r(x + i)
def resnet50():
    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for mid, n, st in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
        for i in range(n):
            layers.append(Bottleneck(cin, mid, st if i == 0 else 1)); cin = mid * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2048, 1000)]
    return nn.Sequential(*layers)
if __name__ == "__main__":  # benchmarks/peers/torch_inference.py imports resnet50()
    mode, bs, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    m = resnet50().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(bs, 3, 224, 224).to(memory_format=torch.channels_last); y = torch.randint(0, 1000, (bs,))
    lossf = nn.CrossEntropyLoss()
    fwd = torch.compile(m) if mode.endswith("-compile") else m
    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=mode.startswith("bf16")):
            loss = lossf(fwd(x), y)
        loss.backward(); opt.step()
    torch.set_num_threads(int(__import__("os").environ.get("PEER_THREADS", torch.get_num_threads())))
    for _ in range(3): step()
    t = time.perf_counter()
    for _ in range(steps): step()
    dt = time.perf_counter() - t
    print(f"PEER torch-ctl {mode} bs={bs}: {bs*steps/dt:.2f} images/sec")
