#!/usr/bin/env bash
# Products from packed operands on vulkan:0 (lowering/heavy_kernels/matmul_packed_kernel.h), on the H100: their tests
# on vulkan:0 and cuda:0, then bf16 and f16 products under the heuristic (packing launches included), each size in two
# fresh processes, with B [K, N] and [N, K], and PyTorch's torch.mm in the same run.
# Pack here: cmake --build build --target spire_bench_matmul spire_lowering_heavy_tests, copy both from build/ into a
# folder bin/, strip them, tar cJf .gpu/pack.tar.xz -C <folder> bin. There, carrying .gpu and .gl:
# bash tools/gpu/run-packed-fragments.sh   (SHAPES, DTYPES and BT to narrow it)
set -uo pipefail
source tools/gpu/env.sh
tar xJf .gpu/pack.tar.xz -C .gpu
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== tests of packed products"
timeout 300 $B/spire_lowering_heavy_tests --gtest_filter="${FILTER:-*MatmulPacked*}" 2>&1 | grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|FAILED" | head -30
for dt in ${DTYPES:-bf16 f16}; do
  for bt in ${BT:-"" --b-transposed}; do
    label="[K, N]"; [ -n "$bt" ] && label="[N, K]"
    echo "== $dt, B $label, the heuristic (ms, two fresh processes; kernels)"
    for n in ${SHAPES:-1024 2048 4096 8192}; do
      for run in 1 2; do
        o=$(SPIRE_VULKAN_PIPELINE_STATS=1 timeout 120 $B/spire_bench_matmul --device vulkan:0 --runs 30 --shapes $n --dtype $dt $bt 2>&1)
        ms=$(echo "$o" | awk '/^vulkan:0 +[0-9]/{print $4}')
        k=$(echo "$o" | grep -o "pipeline '[^']*mma[^']*': CS: Register Count = [0-9]*" | sed "s/pipeline '//; s/': CS: Register Count = / regs=/" | head -1)
        printf "%6s %10s  %s\n" $n "${ms:-fail}" "$k"
        [ -z "$ms" ] && echo "$o" | tail -5
      done
    done
  done
done
echo "== transformer shapes, bf16"
timeout 120 $B/spire_bench_matmul --device vulkan:0 --runs 30 --dtype bf16 2>&1 | grep -E "^vulkan:0|shape" | head -20
echo "== PyTorch"
timeout 300 python3 benchmarks/torch_matmul_conv.py --runs 30 --matmul-only 2>&1 | grep -E "^shape|^[0-9]+x"
