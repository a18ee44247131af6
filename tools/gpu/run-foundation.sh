#!/usr/bin/env bash
# Issue 2 on the GPU machine: devices, every example on vulkan:0 and cuda:0, the runtime test suites, and
# the foundation benchmark next to PyTorch's numbers. Run through the device tool after tools/gpu/prepare.sh.
set -uo pipefail
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
$B/spire devices
$B/spire examples --device all 2>&1 | tee $OUT/examples.txt
SPIRE_VULKAN_VALIDATION=1 $B/spire_examples_tests --gtest_brief=1 2>&1 | tail -15
SPIRE_VULKAN_VALIDATION=1 $B/spire_runtime_conformance_tests --gtest_brief=1 2>&1 | tail -15
$B/spire_cuda_tests --gtest_brief=1 2>&1 | tail -15
SPIRE_VULKAN_TEST_DEVICE=0 $B/spire_vulkan_tests --gtest_brief=1 2>&1 | tail -15
$B/spire_bench_foundation --device all --mib 256 --runs 50 2>&1 | tee $OUT/bench.txt
python3 benchmarks/torch_foundation.py 256 2>&1 | tee -a $OUT/bench.txt
