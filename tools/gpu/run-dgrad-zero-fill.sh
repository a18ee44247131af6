#!/usr/bin/env bash
# The strided layers' input gradients (resnet18, batch 1 and 64, both backends) with the heuristics, two rounds: the 1x1
# downsamples at batch 64 now zero-fill grad_x and run only the phase their taps reach (2026-11-27, thirteenth
# session; docs/PERFORMANCE.md). The tests first: the phases' lowering and results, every input-gradient candidate.
#
# Here: TESTS=1 bash tools/gpu/prepare-goals.sh. There, carrying .gpu and .gl: bash tools/gpu/run-dgrad-zero-fill.sh
set -uo pipefail
source tools/gpu/env.sh
[ -f .gpu/pack.tar.xz ] && tar xJf .gpu/pack.tar.xz -C .gpu
R=/tmp/dgrad_fill
mkdir -p $R
echo "# spire tuning cache 1" > $R/empty_cache.txt
{
  $B/spire_lowering_tests --gtest_filter='*Conv2dGradInputPhases*'
  $B/spire_tuning_tests --gtest_filter='*EveryCandidate*grad_input*'
} 2>&1 | grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran" | tee $R/tests.txt
layers=layer2.0.conv1,layer2.0.downsample,layer3.0.conv1,layer3.0.downsample,layer4.0.conv1,layer4.0.downsample
for round in 1 2; do
  $B/spire_bench_conv2d --device all --runs 30 --passes dgrad --layers $layers --tuning-cache $R/empty_cache.txt 2>&1 | grep -E " dgrad " | tee $R/heuristic_$round.txt
done
tar czf $OUT/dgrad_fill.tar.gz -C /tmp dgrad_fill
