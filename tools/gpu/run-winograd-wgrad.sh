#!/usr/bin/env bash
# The weight gradient by Winograd's F(2x2, 3x3) (2026-11-27, eleventh session; docs/PERFORMANCE.md): its correctness
# on both backends (every candidate of the weight-gradient cases against float64), resnet18's weight gradients at
# batch 1 and 64 next to PyTorch in the same run, and what the tuner picks for the four 3x3 stride-1 layers at batch 64.
#
# Here: TESTS=1 bash tools/gpu/prepare-goals.sh. There, carrying .gpu and .gl: bash tools/gpu/run-winograd-wgrad.sh;
# it returns $OUT/wgrad.tar.gz and prints the table.
set -uo pipefail
source tools/gpu/env.sh
[ -f .gpu/pack.tar.xz ] && tar xJf .gpu/pack.tar.xz -C .gpu
R=/tmp/wgrad
mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
$B/spire_tuning_tests --gtest_filter='*EveryCandidate*grad_weight*:TunedLowering.*' 2>&1 | grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran" | tee $R/tests.txt
$B/spire_bench_conv2d --device all --runs 30 --passes wgrad --csv $R/spire_conv2d.csv 2>&1 | tee $R/spire_wgrad.txt
python3 benchmarks/torch_matmul_conv.py --out $R --runs 30 > $R/torch.txt 2>&1
python3 tools/gpu/speed_table.py $R -o $R/speed.md > /dev/null
grep -E "^\| (layer|---)|wgrad|geometric" $R/speed.md
if [ "${TUNE:-1}" = "1" ]; then
  timeout 240 $B/spire_bench_conv2d --device all --runs 30 --passes wgrad --batches 64 \
    --layers layer1.0.conv1,layer2.0.conv2,layer3.0.conv2,layer4.0.conv2 --tune --tuning-cache $R/tuning.txt 2>&1 |
    grep -v "^tuning" | tee $R/tuned.txt
fi
tar czf $OUT/wgrad.tar.gz -C /tmp wgrad
