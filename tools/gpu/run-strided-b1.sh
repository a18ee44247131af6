#!/usr/bin/env bash
# resnet18's forward convolutions at batch 1 next to PyTorch (the strided ones now take the GEMM in small blocks on a
# GPU), then the models part of the goals (resnet18 b1 and b64 among them) with the same build (2026-11-27, eleventh
# session). Here: TESTS=1 bash tools/gpu/prepare-goals.sh; there, carrying .gpu and .gl: bash tools/gpu/run-strided-b1.sh
set -uo pipefail
source tools/gpu/env.sh
[ -f .gpu/pack.tar.xz ] && tar xJf .gpu/pack.tar.xz -C .gpu
R=/tmp/strided_b1
mkdir -p $R
$B/spire_tuning_tests --gtest_filter='TunedLowering.*:*EveryCandidate*conv2d_gemm*:*EveryCandidate*conv2d_3x3*' 2>&1 | grep -E "^\[  (PASSED|FAILED) " | tee $R/tests.txt
$B/spire_bench_conv2d --device all --runs 30 --passes fwd --batches 1 --csv $R/spire_conv2d.csv 2>&1 | grep " fwd " | tee $R/spire.txt
python3 benchmarks/torch_matmul_conv.py --out $R --runs 30 > $R/torch.txt 2>&1
python3 tools/gpu/speed_table.py $R -o $R/speed.md > /dev/null
grep -E "\| 1 \| fwd|geometric" $R/speed.md
PART=models bash tools/gpu/run-goals.sh 2>&1 | grep -E "^(model|resnet18|encoder)|goal|met|open" | tail -30
tar czf $OUT/strided_b1.tar.gz -C /tmp strided_b1 goals
