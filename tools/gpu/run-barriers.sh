#!/usr/bin/env bash
# Issue 10 item 5 on the GPU machine: barriers only between dependent launches, and the trainer preparing the next
# minibatch while the device runs the current step. The binary from before the change ($B/spire-base, when packed)
# and the current one run interleaved in the same session: LeNet's step at batch 64 and 8192 (device time, median
# of 50), then 3 training epochs on each backend (seconds per epoch), then PyTorch eager's epoch on the same GPU.
# Also the barrier-placement test under synchronization validation and the streamed-values tests on both backends.
# Pack: spire, spire-base, spire_bench_lenet_step, spire_barrier_placement_tests, spire_lowering_tests and the
# Fashion-MNIST .gz files in .gpu/data.
set -uo pipefail
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== barrier placement (SPIRE_VULKAN_VALIDATION=sync) and streamed values"
SPIRE_VULKAN_VALIDATION=sync $B/spire_barrier_placement_tests --gtest_brief=1 2>&1 | tail -3
SPIRE_VULKAN_VALIDATION=1 $B/spire_lowering_tests --gtest_brief=1 --gtest_filter='*Streamed*:*OnDevice*' 2>&1 | tail -3
echo "== LeNet step, launches and barriers"
for b in 64 8192; do $B/spire_bench_lenet_step --device all --batch $b --runs 5 --top 0 2>&1 | grep launches; done
echo "== LeNet step: before (spire-base) and after, interleaved, device time"
for round in 1 2; do
  for b in 64 8192; do
    for dev in cuda:0 vulkan:0; do
      for bin in spire-base spire; do
        [ -x $B/$bin ] || continue
        ms=$($B/$bin lenet bench --batch $b --device $dev --runs 50 --tuning-cache /tmp/none.txt 2>&1 | grep -E "^$dev " | awk '{print $3}')
        echo "round $round  b$b  $dev  $bin  median $ms ms"
      done
    done
  done
done
echo "== training epochs (3), before and after, interleaved"
for dev in cuda:0 vulkan:0; do
  for bin in spire-base spire spire-base spire; do
    [ -x $B/$bin ] || continue
    echo "-- $bin $dev"
    timeout 120 $B/$bin train lenet --device $dev --data .gpu/data --epochs 3 2>&1 | grep -E "^epoch [0-9]:"
  done
done
echo "== PyTorch eager, same recipe"
timeout 120 python3 tools/gpu/torch_lenet_train.py .gpu/data 0 2>&1 | grep -v Warning | head -6
