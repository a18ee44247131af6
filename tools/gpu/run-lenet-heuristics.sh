#!/usr/bin/env bash
# Issue 10 on the GPU machine: LeNet's step with the staged weight gradient of the first convolution, 16 elements per
# invocation in its forward pass, the second convolution's row kernels looping over the window's rows and the widest
# cross_entropy workgroup as heuristics. The conv-gradient and candidate tests on both backends (validation on), the
# step before ($B/spire-base) and after at batch 64 and 8192 interleaved, the step's launches at 8192, and 3 training
# epochs per backend. Pack spire, spire-base, spire_lowering_heavy_tests, spire_tuning_tests and Fashion-MNIST.
set -uo pipefail
source tools/gpu/env.sh
echo "== tests"
SPIRE_VULKAN_VALIDATION=1 $B/spire_lowering_heavy_tests --gtest_brief=1 --gtest_filter='*Conv2d*' 2>&1 | tail -2
SPIRE_VULKAN_VALIDATION=1 $B/spire_tuning_tests --gtest_brief=1 --gtest_filter='*grad_weight*:*shared_weights*:*conv2d_pad1*:*grad_input_pad1*:*cross_entropy*:Heuristics*:Candidates*' 2>&1 | grep -v "^tuning" | tail -2
echo "== step before/after (median ms of 30, fresh processes)"
for round in 1 2; do for b in 8192 64; do for dev in cuda:0 vulkan:0; do for bin in spire-base spire; do
  ms=$($B/$bin lenet bench --batch $b --device $dev --runs 30 --tuning-cache /tmp/none.txt 2>&1 | grep -E "^$dev " | awk '{print $3}')
  echo "round $round b$b $dev $bin $ms"
done; done; done; done
for dev in cuda:0 vulkan:0; do
  echo "-- $dev b8192 launches (new)"
  $B/spire lenet bench --batch 8192 --device $dev --runs 20 --profile --tuning-cache /tmp/none.txt 2>&1 | grep -E "conv2d|cross_entropy_2|^$dev " | awk '{print "   ", $2, $4, $NF}'
done
echo "== training, 3 epochs"
for dev in cuda:0 vulkan:0; do
  timeout 120 $B/spire train lenet --device $dev --data .gpu/data --epochs 3 2>&1 | grep -E "^epoch [0-9]:"
done
