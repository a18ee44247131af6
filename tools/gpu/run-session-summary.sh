#!/usr/bin/env bash
# The end-of-session check on the H100: every op of the harness on both backends, LeNet at batch 64 on vulkan:0 under
# the validation layer (its messages counted), the convolution and LeNet tests of the heavy kernels on both backends,
# LeNet's step at batch 8192 and 64 (fresh processes, twice) with this build and the one before ($B/spire-base), each
# with the Vulkan driver's bounds checks (SPIRE_VULKAN_BUFFER_CHECKS=1) and without, the b8192 profile's top 14 launches
# on each backend, bf16 matmul 8192 on vulkan:0 with and without the checks (fresh processes, three times), and 3
# training epochs per backend. Pack spire, spire-base, spire_lowering_heavy_tests and spire_bench_matmul.
set -uo pipefail
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for dev in cuda:0 vulkan:0; do echo "test-ops $dev: $($B/spire test-ops --device $dev 2>&1 | tail -1)"; done
msgs=$(SPIRE_VULKAN_VALIDATION=1 $B/spire lenet bench --batch 64 --device vulkan:0 --runs 3 2>&1 | grep -iE "VUID|validation (error|warning)")
echo "validation layer, LeNet b64 on vulkan:0: $(printf '%s' "$msgs" | grep -c .) messages"; printf '%s\n' "$msgs" | head -5
$B/spire_lowering_heavy_tests --gtest_filter='*onv*:*LeNet*:*Pool2d*' 2>&1 | grep -E "FAILED|PASSED" | tail -3
for run in 1 2; do for b in 8192 64; do
  for bin in spire-base spire; do
    echo "run $run b$b cuda:0 $bin $($B/$bin lenet bench --batch $b --device cuda:0 --runs 30 2>&1 | grep -E '^cuda:0 ' | awk '{print $3}')"
    for checks in 1 0; do
      echo "run $run b$b vulkan:0 $bin checks=$checks $(SPIRE_VULKAN_BUFFER_CHECKS=$checks $B/$bin lenet bench --batch $b --device vulkan:0 --runs 30 2>&1 | grep -E '^vulkan:0 ' | awk '{print $3}')"
    done
  done
done; done
for dev in cuda:0 vulkan:0; do
  echo "== $dev b8192 profile (ms, kernel), the top 14"
  $B/spire lenet bench --batch 8192 --device $dev --runs 20 --profile 2>&1 | awk 'NF > 3 && $2 ~ /^[0-9.]+$/ {print $2, $NF}' | sort -rn | head -14
done
for r in 1 2 3; do for checks in 1 0; do
  echo "bf16 8192 vulkan:0 checks=$checks $(SPIRE_VULKAN_BUFFER_CHECKS=$checks $B/spire_bench_matmul --device vulkan:0 --runs 20 --shapes 8192 --dtype bf16 2>&1 | grep -E '^vulkan' | awk '{print $4}')"
done; done
for dev in cuda:0 vulkan:0; do
  echo "== $dev: 3 epochs"
  timeout 120 $B/spire train lenet --device $dev --data .gpu/data --epochs 3 2>&1 | grep -E "^epoch [0-9]:"
done
