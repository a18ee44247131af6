#!/usr/bin/env bash
# The split-K partial sums added by several invocations per output where outputs are few (split_sum_kernel.h) on the
# H100: the kernel's tests on both backends (the documented order's bits), LeNet's step before ($B/spire-base, the
# previous build) and after, interleaved, fresh processes, at batch 8192 and 64, the sum launches' times in the
# step's profile, and 3 training epochs per backend. Pack spire, spire-base and spire_lowering_heavy_tests.
set -uo pipefail
source tools/gpu/env.sh
$B/spire_lowering_heavy_tests --gtest_filter='*SplitSum*' 2>&1 | grep -E "FAILED|PASSED" | tail -3
for round in 1 2; do for b in 8192 64; do for dev in cuda:0 vulkan:0; do for bin in spire-base spire; do
  ms=$($B/$bin lenet bench --batch $b --device $dev --runs 30 2>&1 | grep -E "^$dev " | awk '{print $3}')
  echo "round $round b$b $dev $bin $ms"
done; done; done; done
for dev in cuda:0 vulkan:0; do for bin in spire-base spire; do
  echo "-- $dev b8192 $bin: the partial sums' launches (ms, kernel)"
  $B/$bin lenet bench --batch 8192 --device $dev --runs 20 --profile 2>&1 | grep -E "_sum_|sum_to" | awk '{print "   ", $2, $NF}'
done; done
for dev in cuda:0 vulkan:0; do
  timeout 120 $B/spire train lenet --device $dev --data .gpu/data --epochs 3 2>&1 | grep -E "^epoch [0-9]:"
done
