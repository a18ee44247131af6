#!/usr/bin/env bash
# The tensor-core matmul with its K loop unrolled by the pipeline depth (unroll=S) on vulkan:0, where copies are
# staged through registers and now land at the wait that covers them (backends/spirv/copy_plan.h): correctness of
# the kernel's cases and of the copy pipelines on vulkan:0 and cuda:0, then the tilings at 2048 to 8192 each in a
# fresh process (tools/gpu/run-coopmat-configs.sh), the heuristic next to PyTorch's bf16 in the same run.
# Pack as tools/gpu/run-coopmat.sh says; there: tar xJf .gpu/pack.tar.xz -C .gpu; carry .gpu and .gl.
set -uo pipefail
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
echo "== copies into workgroup memory on vulkan:0 (validation layer on, cooperative matrices masked)"
SPIRE_MASK_FEATURES=cooperative-matrix SPIRE_VULKAN_VALIDATION=1 timeout 120 $B/spire_vulkan_tests --gtest_filter='*AsyncCopy*' --gtest_brief=1 2>&1 | tail -3
echo "== tensor-core matmul kernel tests on vulkan:0 and cuda:0"
SPIRE_EXPECT_COOPERATIVE_MATRIX=1 timeout 400 $B/spire_lowering_heavy_tests --gtest_filter='*MatmulMma*' --gtest_brief=1 2>&1 | tail -6
echo "== tilings on vulkan:0, bf16, ms (median of 30), a process per tiling and shape"
CONFIGS=${CONFIGS:-"128,256,16,4,4,2 128,256,16,4,4,3,3 128,256,16,2,4,3,3 128,128,16,2,2,3,3 128,128,16,2,2,4,4 128,128,16,2,4,4,4 128,128,32,2,2,2"} \
  SHAPES=${SHAPES:-"2048 4096 8192"} bash tools/gpu/run-coopmat-configs.sh
echo "== PyTorch bf16, same GPU"
timeout 300 python3 benchmarks/torch_matmul_conv.py --runs 30 --matmul-only 2>&1 | grep -iE "bf16|dtype|M x" | head -12
