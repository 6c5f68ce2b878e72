"""Three CPU-scale MLPerf ResNet runs with compliant logs and the (labelled) olympic score.

The gin file writes its records (real scikit-learn digits) on first use.
MLBENCH_EXAMPLE_TINY=1 runs one short run (the tests do).
"""
import os
import tempfile

from mlbench.mlperf.run import run_many

TINY = bool(os.environ.get("MLBENCH_EXAMPLE_TINY"))
output_dir = tempfile.mkdtemp(prefix="mlperf_cpu_resnet_") if TINY else "runs/mlperf_cpu_resnet"
records, score = run_many(["mlperf/cpu/resnet_digits.gin"],
                          ["train.train_epochs = 2"] if TINY else [], runs=1 if TINY else 3,
                          output_dir=output_dir)
for record in records:
    print(record.seed, record.status, record.minutes, record.checker_passed, record.log)
print("score:", score.label)
