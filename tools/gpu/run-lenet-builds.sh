#!/usr/bin/env bash
# LeNet's step with the previous build ($B/spire-base) against this one ($B/spire) on the H100: a test binary's
# filtered tests on both backends first (TESTS="binary filter", e.g. "spire_lowering_heavy_tests *SplitSum*"), then
# the step interleaved, fresh processes, twice each, at batch 8192 and 64; the launches matching SHOW (a regex of
# kernel names) in each build's b8192 profile; and 3 training epochs per backend with this build. Pack spire,
# spire-base and the test binary. Used for split_sum_kernel.h (SHOW=_sum_) and the reductions' prologues
# (SHOW=sum_to).
set -uo pipefail
source tools/gpu/env.sh
if [ -n "${TESTS:-}" ]; then
  set -- $TESTS
  $B/$1 --gtest_filter="$2" 2>&1 | grep -E "FAILED|PASSED" | tail -3
fi
for round in 1 2; do for b in 8192 64; do for dev in cuda:0 vulkan:0; do for bin in spire-base spire; do
  ms=$($B/$bin lenet bench --batch $b --device $dev --runs 30 2>&1 | grep -E "^$dev " | awk '{print $3}')
  echo "round $round b$b $dev $bin $ms"
done; done; done; done
for dev in cuda:0 vulkan:0; do for bin in spire-base spire; do
  echo "-- $dev b8192 $bin: launches matching '${SHOW:-_sum_}' (ms, kernel), and the launch count"
  $B/$bin lenet bench --batch 8192 --device $dev --runs 20 --profile 2>&1 | grep -E "${SHOW:-_sum_}|launches\)" | awk '{print "   ", $2, $NF}'
done; done
for dev in cuda:0 vulkan:0; do
  timeout 120 $B/spire train lenet --device $dev --data .gpu/data --epochs 3 2>&1 | grep -E "^epoch [0-9]:"
done
