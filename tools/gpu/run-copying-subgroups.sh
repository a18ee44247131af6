#!/usr/bin/env bash
# Copying subgroups beside the multiplying ones (MatmulTiling::producers, matmul_mma_kernel.h) on the H100: the
# tensor-core tests on vulkan:0 and cuda:0, then bf16 tilings with and without copying subgroups, each size in a fresh
# process (tools/gpu/run-coopmat-configs.sh, with registers), then PyTorch's bf16 torch.mm in the same run.
# Pack here: cmake --build build --target spire_bench_matmul spire_lowering_heavy_tests, copy both from build/ into a
# folder bin/, strip them, tar cJf .gpu/pack.tar.xz -C <folder> bin. There, carrying .gpu and .gl:
# bash tools/gpu/run-copying-subgroups.sh (CONFIGS and SHAPES as run-coopmat-configs.sh takes them).
set -uo pipefail
source tools/gpu/env.sh
tar xJf .gpu/pack.tar.xz -C .gpu
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== tensor-core tests"
# Every case on both devices takes over 5 minutes (a pipeline per case), and MatmulMmaKernel.PtxAssembles... runs ptxas
# over every candidate: FILTER picks some (2026-11-28: '*vulkan_0*p?_*:*vulkan_0*t128x256x16_w2x4_s3u_*:*cuda_0*p?_*').
timeout 300 $B/spire_lowering_heavy_tests --gtest_filter="${FILTER:-*MatmulMmaOnDevice*p?_*}" 2>&1 | grep -E "^\[  (PASSED|FAILED) |tests ran|FAILED" | head -30
echo "== tilings, bf16 (ms; ! = the bench fell back to the heuristic)"
export SHAPES=${SHAPES:-"4096 8192"} STATS=1
export CONFIGS=${CONFIGS:-"128,256,16,2,4,3,3 128,256,16,2,4,3,3,1 128,256,16,2,4,3,3,2 128,256,16,2,4,3,3,4 128,256,16,2,4,3,1,2 \
128,256,16,2,4,2,1,2 128,256,16,4,4,3,3,2 128,128,32,2,2,2,1,2 128,128,32,2,4,2,1,2 128,256,16,2,4,3,3"}
mkdir -p /tmp/caches && OUT=/tmp/caches bash tools/gpu/run-coopmat-configs.sh
echo "== PyTorch bf16"
timeout 300 python3 benchmarks/torch_matmul_conv.py --runs 30 --matmul-only 2>&1 | grep -E "^shape|^(4096|8192)x"
