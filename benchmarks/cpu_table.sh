#!/usr/bin/env bash
# This machine's CPU table (docs/benchmarks.md): the page's five models, synthetic and real
# data (ImageNet-format records of real photos), batch 32 and 64, float32 and bf16.
#   bash benchmarks/cpu_table.sh [num_batches] [num_runs]
set -euo pipefail
cd "$(dirname "$0")/.."
batches=${1:-5}; runs=${2:-2}
stamp=$(date +%Y%m%d_%H%M%S)  # a new folder per run: earlier tables are never overwritten
PY=.venv/bin/python
export TF_CPP_MIN_LOG_LEVEL=2
[ -f data/photos/train-00000-of-00002 ] || $PY -m mlbench data imagenet --source=photos --output_dir=data/photos
for precision in mixed_bfloat16 float32; do
  for batch in 32 64; do
    $PY -m mlbench benchmark --suite=cpu_2core --data_dir=data/photos \
      --output_dir=runs/cpu_table/${stamp}/${precision}_bs${batch} \
      --gin_bindings="benchmark_suite.precision='${precision}'" \
      --gin_bindings="benchmark_suite.num_batches=${batches}" \
      --gin_bindings="benchmark_suite.num_runs=${runs}" \
      --gin_bindings="benchmark_suite.num_warmup_batches=2" \
      --gin_bindings="benchmark_suite.name='2-core CPU, batch ${batch}, ${precision}'" \
      --gin_bindings="benchmark_suite.batch_sizes={'inception_v3': ${batch}, 'resnet50': ${batch}, 'resnet152': ${batch}, 'alexnet': ${batch}, 'vgg16': ${batch}}"
  done
done
echo "wrote runs/cpu_table/${stamp}"
