#!/usr/bin/env bash
# LeNet's step before and after a session's kernels, interleaved, fresh processes, twice each: "before" forces the
# previous heuristics' configs through a tuning cache (nothing else of the step changed), "after" is the heuristic.
# BEFORE: which layer's previous configs (tools/gpu/lenet_before_cache.sh: conv2, the default, or conv1).
# Batch 8192 and 64 on both backends; the profile after; then 3 training epochs on each backend (Fashion-MNIST
# copied into .gpu/data from Debian's dataset-fashion-mnist). Pack spire.
set -uo pipefail
source tools/gpu/env.sh
source tools/gpu/lenet_before_cache.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
step() { grep -E "^$1 |warning" | awk '/warning/ {printf "(a config was ignored!) "; next} {printf "%s", $3}'; }
for batch in 8192 64; do
  for dev in cuda:0 vulkan:0; do
    for run in 1 2; do
      before=$($B/spire lenet bench --batch $batch --device $dev --runs 30 --tuning-cache /tmp/before.tsv 2>&1 | step $dev)
      after=$($B/spire lenet bench --batch $batch --device $dev --runs 30 --tuning-cache /tmp/none.tsv 2>&1 | step $dev)
      echo "$dev b$batch run $run: before $before ms, after $after ms"
    done
  done
done
for dev in cuda:0 vulkan:0; do
  echo "== $dev b8192 profile after (ms, kernel), the top 12"
  $B/spire lenet bench --batch 8192 --device $dev --runs 20 --profile --tuning-cache /tmp/none.tsv 2>&1 |
    awk 'NF > 3 && $2 ~ /^[0-9.]+$/ {print $2, $NF}' | sort -rn | head -12
done
echo "== training epochs (3) on each backend"
for dev in cuda:0 vulkan:0; do
  echo "$dev:"; timeout 120 $B/spire train lenet --device $dev --data .gpu/data --epochs 3 2>&1 | grep -E "^epoch [0-9]:"
done
