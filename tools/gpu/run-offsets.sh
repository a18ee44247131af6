#!/usr/bin/env bash
# The PTX backend's constant index terms as immediate offsets (backends/ptx/ptx_translator.h, ConstantOffset) on the
# H100: every op of the harness on cuda:0 against float64, the heavy kernels' and lowering tests on both backends, then
# LeNet's step with the previous build against this one (tools/gpu/run-lenet-builds.sh: fresh processes, twice, the
# profile's convolution and product launches, 3 epochs). Pack spire, spire-base, spire_lowering_tests and
# spire_lowering_heavy_tests.
set -uo pipefail
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
$B/spire test-ops --device cuda:0 2>&1 | tail -2
$B/spire_lowering_heavy_tests --gtest_filter='*cuda_0*' 2>&1 | grep -E "FAILED|PASSED" | tail -3
TESTS="spire_lowering_tests *LinearBias*:*BiasSide*:*PooledSideOutput*:*Gathered*:*Train*" \
  SHOW='conv2d|matmul_m8192|max_pool2d' bash tools/gpu/run-lenet-builds.sh
