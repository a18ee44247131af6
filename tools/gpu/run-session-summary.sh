#!/usr/bin/env bash
# The end-of-session check on the H100: the recent sessions' kernels' tests on both backends (staged kernels' and the
# split loss's candidates against float64, the split sums' bits, the pooled bias sums and prologues, the weight
# gradient computing its pooling gradient, the convolutions storing their poolings, the bias sums beside them and beside
# the linear layers' weight gradients, bf16 through a prologue; every op on cuda:0), LeNet's step at batch 8192 and 64
# (fresh processes, twice), the b8192 profile's top 14 launches on each backend and 3 training epochs per backend (and
# with $B/spire-base where packed, the build before). Pack spire, spire_tuning_tests, spire_lowering_tests and
# spire_lowering_heavy_tests.
set -uo pipefail
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
$B/spire test-ops --device cuda:0 2>&1 | tail -1
$B/spire_tuning_tests --gtest_filter='*row_split*:*image_strips*:*all_pairs*:*conv2d_images*:*cross_entropy*:Heuristics.*' 2>&1 | grep -E "FAILED|PASSED" | tail -3
$B/spire_lowering_tests --gtest_filter='SumThroughMaxPool*:Fuse*:*SiluMlp*:*Train*:*Gathered*:*PooledSideOutput*:*PoolGradByArgmax*:*BiasSide*:*LinearBias*' 2>&1 | grep -E "FAILED|PASSED" | tail -3
$B/spire_lowering_heavy_tests --gtest_filter='*SplitSum*:*Epilogue*:*LeNet*:*Pool2d*:*Template*' 2>&1 | grep -E "FAILED|PASSED" | tail -3
for run in 1 2; do for b in 8192 64; do for dev in cuda:0 vulkan:0; do
  echo "run $run b$b $dev $($B/spire lenet bench --batch $b --device $dev --runs 30 2>&1 | grep -E "^$dev " | awk '{print $3}')"
done; done; done
for dev in cuda:0 vulkan:0; do
  echo "== $dev b8192 profile (ms, kernel), the top 14"
  $B/spire lenet bench --batch 8192 --device $dev --runs 20 --profile 2>&1 | awk 'NF > 3 && $2 ~ /^[0-9.]+$/ {print $2, $NF}' | sort -rn | head -14
done
for bin in spire-base spire; do
  [ -x $B/$bin ] || continue
  for dev in cuda:0 vulkan:0; do
    echo "== $bin $dev: 3 epochs"
    timeout 120 $B/$bin train lenet --device $dev --data .gpu/data --epochs 3 2>&1 | grep -E "^epoch [0-9]:"
  done
done
