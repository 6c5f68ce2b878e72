"""Three CPU-scale MLPerf ResNet runs with compliant logs and the olympic score.

First: .venv/bin/mlbench data imagenet --source=digits --image_size=32 --output_dir=data/digits32
"""
from mlbench.mlperf.run import run_many

records, score = run_many(["mlperf/cpu/resnet_digits.gin"], runs=3,
                          output_dir="runs/mlperf_cpu_resnet")
for record in records:
    print(record.seed, record.status, record.minutes, record.checker_passed, record.log)
print("score (minutes):", score)
