"""Predict the minutes of CPU-scale MLPerf ResNet runs, then run them (the prediction gate).

    .venv/bin/python benchmarks/time_to_train_cpu.py [runs] [--save=FILE]

1. `mlbench.benchmark` times resnet_tiny on the digits records the runs use (training at
   global batch 128, and forward-only for the evals), on this machine.
2. `mlbench.project(..., to_quality=True)` turns those rates into minutes with the shipped
   CPU-scale RCP (gin/mlperf/cpu/rcps_resnet_digits.json) and the config's cadence (eval
   every 2 epochs of 1,438 images, on 359).
3. `mlbench mlperf --gin_file=mlperf/cpu/resnet_digits.gin --runs=N` runs them; their
   minutes are read from the logs as MLCommons' result summarizer reads them.

Prints the prediction (point and band) beside the measured olympic mean; `--save` writes
the figures (tests/fixtures/cpu_time_to_train.json pins the arithmetic on them).
"""
import json
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import mlbench  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPO, "data", "digits32")
RCP = os.path.join(REPO, "gin", "mlperf", "cpu", "rcps_resnet_digits.json")
CADENCE = dict(train_examples=1438, eval_every_epochs=2, eval_examples=359)


def measured_rates():
    if not os.path.isdir(DATA):
        subprocess.run([sys.executable, "-m", "mlbench", "data", "imagenet",
                        "--source=digits", "--image_size=32", f"--output_dir={DATA}"],
                       check=True)
    common = dict(data="real", data_dir=DATA, batch_size=128, num_classes=10,
                  num_warmup_batches=5, num_batches=30, num_runs=3, verbose=False)
    train = mlbench.benchmark("resnet_tiny", **common)
    forward = mlbench.benchmark("resnet_tiny", forward_only=True, **common)
    return train, forward


def predicted(train, forward):
    run = mlbench.project(model="resnet_tiny", images_per_sec=train.images_per_sec.mean,
                          batch_size=128, devices=[2], to_quality=True, rcp_path=RCP,
                          global_batch_size=128, forward_result=forward, **CADENCE)
    return next(t for t in run.time_to_train if t.devices == 1)


def run_set(runs):
    out = tempfile.mkdtemp(prefix="mlbench_ttt_")
    subprocess.run([sys.executable, "-m", "mlbench", "mlperf",
                    "--gin_file=mlperf/cpu/resnet_digits.gin", f"--runs={runs}",
                    f"--output_dir={out}"], cwd=REPO, check=False)
    with open(os.path.join(out, "results.json")) as f:
        return json.load(f)


def main(runs=5, save=None):
    train, forward = measured_rates()
    estimate = predicted(train, forward)
    print(estimate.line())
    measured = run_set(runs)
    minutes = [r["minutes"] for r in measured["runs"]]
    mean = measured["score"]["minutes"]
    print(f"measured: {runs} runs {[round(m, 3) for m in minutes]}; olympic mean "
          f"{mean:.3f} min; predicted {estimate.minutes:.3f} [{estimate.minutes_low:.3f}–"
          f"{estimate.minutes_high:.3f}]: measured / predicted = {mean / estimate.minutes:.3f}")
    if save:
        figures = {"train_images_per_sec": train.images_per_sec.mean,
                   "forward_images_per_sec": forward.images_per_sec.mean,
                   "predicted": {k: getattr(estimate, k) for k in (
                       "minutes", "minutes_low", "minutes_high", "evals")},
                   "measured_minutes": minutes, "measured_olympic_mean": mean,
                   "environment": train.environment}
        with open(save, "w") as f:
            json.dump(figures, f, indent=1)
        print(f"wrote {save}")


if __name__ == "__main__":
    flags = [a for a in sys.argv[1:] if a.startswith("--save=")]
    numbers = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(int(numbers[0]) if numbers else 5, flags[0].split("=", 1)[1] if flags else None)
