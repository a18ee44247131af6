#!/usr/bin/env bash
# An experiment on vulkan:0's bf16 product (not a feature): B's fragments loaded by the multiplying subgroups straight
# from the buffer (SPV_NV_cooperative_matrix2 tensor loads at subgroup scope, a round ahead into a second set of
# fragments), the copying subgroups staging only A. Build it from
# docs/performance/vulkan_direct_b_experiment_2026-11-28.patch (git apply, then spire and spire_bench_matmul), pack
# both as in tools/gpu/run-copying-subgroups.sh; there, carrying .gpu and .gl: bash tools/gpu/run-direct-b-experiment.sh.
# Then PART=models of tools/gpu/run-channels-last-conv.sh (the f16 resnet18 with PyTorch) unless MODELS=0.
set -uo pipefail
source tools/gpu/env.sh
tar xJf .gpu/pack.tar.xz -C .gpu
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/caches
export SHAPES=${SHAPES:-"4096 8192"} STATS=1
for bt in "" 1; do
  label="[K, N]"; [ -n "$bt" ] && label="[N, K]"
  echo "== B as $label: the heuristic's tiling (4 copying subgroups, B staged), then B loaded directly"
  BT=$bt CONFIGS="128,256,16,2,4,3,3,4" OUT=/tmp/caches bash tools/gpu/run-coopmat-configs.sh
  SPIRE_MMA_EXP=directb BT=$bt CONFIGS=${CONFIGS:-"128,256,16,2,4,2,2,2 128,256,16,2,4,2,2,4 128,256,16,2,4,4,4,2 128,256,16,2,4,4,4,4"} \
    OUT=/tmp/caches bash tools/gpu/run-coopmat-configs.sh
done
echo "== PyTorch bf16"
timeout 300 python3 benchmarks/torch_matmul_conv.py --runs 30 --matmul-only 2>&1 | grep -E "^shape|^(4096|8192)x"
[ "${MODELS:-1}" = 1 ] && PART=models bash tools/gpu/run-channels-last-conv.sh
