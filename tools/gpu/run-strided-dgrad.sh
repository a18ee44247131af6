#!/usr/bin/env bash
# resnet18's strided input gradients with every phase in one launch and split-K at a small batch (2026-11-27, twelfth
# session): the kernels' checks on both backends, the tuner over the six strided layers at batch 1 with every
# candidate's time (SPIRE_TUNING_LOG; TUNE=0 skips it, TUNE_DEVICE and TUNE_LAYERS narrow it), then the heuristics at
# batch 1 and 64 (BATCHES) next to PyTorch's, same run.
# Here: TESTS=1 bash tools/gpu/prepare-goals.sh; there, carrying .gpu and .gl: bash tools/gpu/run-strided-dgrad.sh
set -uo pipefail
source tools/gpu/env.sh
[ -f .gpu/pack.tar.xz ] && tar xJf .gpu/pack.tar.xz -C .gpu
R=/tmp/strided_dgrad
mkdir -p $R
$B/spire_lowering_tests --gtest_filter='*GradInputPhases*' 2>&1 | grep -E "^\[  (PASSED|FAILED) " | tee $R/tests.txt
$B/spire_tuning_tests --gtest_filter='*EveryCandidate*grad_input*:TunedLowering.*:*TuneFlow*' 2>&1 |
  grep -E "^\[  (PASSED|FAILED) " | tee -a $R/tests.txt
if [ "${TUNE:-1}" = "1" ]; then
  layers=${TUNE_LAYERS:-layer2.0.conv1,layer3.0.conv1,layer4.0.conv1,layer2.0.downsample,layer3.0.downsample,layer4.0.downsample}
  SPIRE_TUNING_LOG=$R/candidates.tsv timeout 300 $B/spire_bench_conv2d --device ${TUNE_DEVICE:-all} --runs 30 --passes dgrad --batches 1 \
    --layers $layers --tune --tuning-cache $R/tc.txt 2>&1 | grep -v "^tuning"
fi
$B/spire_bench_conv2d --device all --runs 30 --passes dgrad --batches ${BATCHES:-1,64} --csv $R/spire_conv2d.csv 2>&1 |
  grep " dgrad " | tee $R/spire.txt
python3 benchmarks/torch_matmul_conv.py --out $R --runs 30 > $R/torch.txt 2>&1
python3 tools/gpu/speed_table.py $R -o $R/speed.md > /dev/null
grep -E "dgrad|geometric" $R/speed.md
tar czf $OUT/strided_dgrad.tar.gz -C /tmp strided_dgrad
