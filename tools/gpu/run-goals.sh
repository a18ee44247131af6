#!/usr/bin/env bash
# The headline figures of docs/PERFORMANCE.md (the speed goals spire was held to) measured in one go with the current
# build, next to PyTorch on the same GPU, then the goal table (tools/gpu/goals_table.py): fp32 and bf16 matmul against
# cuBLAS, the resnet18 convolutions, LeNet's step at batch 64 and 8192 (time and launches), resnet18 and the
# transformer encoder layer against eager PyTorch and torch.compile, and LeNet's training epochs on both backends.
# All spire times are device timestamps after the shared warm-up (tuning/warm_up.h); configs are the heuristics (a
# fresh machine's empty tuning cache). Run it before and after a change that must keep these figures.
#
# Here: bash tools/gpu/prepare.sh (packs .gpu/pack.tar.xz). There, carrying .gpu and .gl, in two calls (each under the
# device's 10 minutes): PART=kernels bash tools/gpu/run-goals.sh, then PART=models bash tools/gpu/run-goals.sh. Each
# returns its files as $OUT/goals_PART.tar.gz (the kernels' speed.md beside it) and prints the goals it measured; for
# the whole table, back here: unpack both archives into one folder and run python3 tools/gpu/goals_table.py FOLDER/goals.
set -uo pipefail
source tools/gpu/env.sh
G=/tmp/goals
mkdir -p $G
runs=${RUNS:-30}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $G/gpu_${PART:-}.txt
case "${PART:-}" in
kernels)
  $B/spire_bench_matmul --device all --runs $runs --csv $G/spire_matmul.csv 2>&1 | tee $G/spire_matmul.txt
  $B/spire_bench_matmul --device all --runs $runs --dtype bf16 --csv $G/spire_matmul_bf16.csv 2>&1 | tee $G/spire_matmul_bf16.txt
  $B/spire_bench_conv2d --device all --runs $runs --csv $G/spire_conv2d.csv 2>&1 | tee $G/spire_conv2d.txt
  python3 benchmarks/torch_matmul_conv.py --out $G --runs $runs 2>&1 | tee $G/torch.txt
  python3 tools/gpu/speed_table.py $G -o $G/speed.md > /dev/null
  python3 tools/gpu/goals_table.py $G
  ;;
models)
  for b in 64 8192; do
    $B/spire_bench_lenet_step --device all --batch $b --runs $runs --top 0 2>&1 | tee $G/lenet_step_b$b.txt
  done
  python3 benchmarks/torch_lenet_step.py 64 8192 2>&1 | grep -v Warn | tee $G/torch_lenet_step.txt
  M=/tmp/models
  mkdir -p $M && cp .gpu/models/* $M/
  python3 benchmarks/torch_models.py $M 2>&1 | grep -v Warning | tee $G/torch_models.txt
  python3 tools/gpu/models_table.py $B/spire $M $G/torch_models.txt 2>&1 | tee $G/models_table.txt
  for dev in cuda:0 vulkan:0; do
    timeout 300 $B/spire train lenet --device $dev --data .gpu/data 2>&1 | grep -E "^(device|epoch [0-9]+:)" | tee $G/train_${dev/:/}.txt
  done
  python3 tools/gpu/goals_table.py $G
  ;;
*) echo "PART=kernels or PART=models"; exit 2 ;;
esac
# The device returns a few files only: both parts' files in one archive, the tables beside it.
tar czf $OUT/goals_$PART.tar.gz -C /tmp goals
cp $G/speed.md $OUT/ 2>/dev/null || true
