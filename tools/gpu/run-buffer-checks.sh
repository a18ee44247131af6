#!/usr/bin/env bash
# Storage buffer accesses without the driver's bounds checks (VK_EXT_pipeline_robustness, runtime/vulkan/vulkan_kernel.cpp)
# on the H100's vulkan:0, against SPIRE_VULKAN_BUFFER_CHECKS=1 (the checks left in): every op of the harness, LeNet's
# step at batch 8192 and 64 in fresh processes, interleaved, three rounds; each way's b8192 profile; fp32 and bf16
# matmul 8192; and each way's pipeline cache into $OUT (for the SASS: tools/gpu/vulkan_cache_sass.py). Pack spire and spire_bench_matmul.
set -uo pipefail
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "-- test-ops vulkan:0 unchecked"; $B/spire test-ops --device vulkan:0 2>&1 | tail -1
for round in 1 2 3; do for b in 8192 64; do for checks in 1 0; do
  ms=$(SPIRE_VULKAN_BUFFER_CHECKS=$checks $B/spire lenet bench --batch $b --device vulkan:0 --runs 30 2>&1 | grep -E "^vulkan:0 " | awk '{print $3}')
  echo "round $round b$b vulkan:0 checks=$checks $ms"
done; done; done
for checks in 1 0; do
  echo "-- vulkan:0 b8192 checks=$checks: launches (ms, kernel)"
  SPIRE_VULKAN_BUFFER_CHECKS=$checks $B/spire lenet bench --batch 8192 --device vulkan:0 --runs 20 --profile 2>&1 | grep -E "^ +[0-9]+ |total" | awk '{print "   ", $2, $NF}'
done
for checks in 1 0; do for dt in f32 bf16; do
  echo "-- matmul 8192 $dt checks=$checks"
  SPIRE_VULKAN_BUFFER_CHECKS=$checks $B/spire_bench_matmul --device vulkan:0 --runs 10 --shapes 8192 --dtype $dt 2>&1 | grep -E "8192" | head -2
done; done
# The pipeline caches come back in $OUT: the GPU machine has no zstd, so split them with
# tools/gpu/vulkan_cache_sass.py and disassemble (nvdisasm --binary SM90) where it has.
for checks in 1 0; do
  rm -rf /tmp/vc$checks; SPIRE_CACHE_DIR=/tmp/vc$checks SPIRE_VULKAN_BUFFER_CHECKS=$checks $B/spire lenet bench --batch 8192 --device vulkan:0 --runs 2 > /dev/null 2>&1
  cp /tmp/vc$checks/vulkan-pipelines-*.bin $OUT/pipelines-checks$checks.bin
done
