#!/usr/bin/env bash
# The tensor-core matmul whose unrolled pipeline lands its prologue's copies before the K loop (2026-11-27): its
# cases against float64 on vulkan:0 and cuda:0, registers, then bf16 n^3 on vulkan:0 with the heuristic, each size in
# three fresh processes (the driver-state effect: a process in four or so runs ~3x slower throughout), PyTorch's
# bf16 in the same run. Pack spire_bench_matmul and spire_lowering_heavy_tests into .gpu/bin; there:
# tar xJf .gpu/pack.tar.xz -C .gpu; carry .gpu and .gl.
set -uo pipefail
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== tensor-core matmul kernel tests on vulkan:0 and cuda:0"
SPIRE_EXPECT_COOPERATIVE_MATRIX=1 timeout 400 $B/spire_lowering_heavy_tests --gtest_filter='*MatmulMma*' --gtest_brief=1 2>&1 | tail -4
echo "== registers (vulkan:0, 8192^3)"
SPIRE_VULKAN_PIPELINE_STATS=1 timeout 120 $B/spire_bench_matmul --device vulkan:0 --runs 3 --shapes 8192 --dtype bf16 2>&1 | grep -oE "mma_f32[^']*': CS: Register Count = [0-9]+"
echo "== bf16 on vulkan:0, heuristic, ms (median of 30), a process each"
for n in ${SHAPES:-2048 4096 8192}; do
  printf "%-8s" "$n^3"
  for rep in 1 2 3; do
    ms=$(timeout 120 $B/spire_bench_matmul --device vulkan:0 --runs 30 --shapes $n --dtype bf16 2>&1 | awk '/^vulkan:0 +[0-9]/{print $4}')
    printf "%10s" "${ms:-fail}"
  done
  echo
done
echo "== PyTorch bf16, same GPU"
timeout 300 python3 benchmarks/torch_matmul_conv.py --runs 30 --matmul-only 2>&1 | head -12
