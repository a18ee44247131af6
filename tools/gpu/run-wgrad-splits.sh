#!/usr/bin/env bash
# The weight gradients that take the GEMM (resnet18's first layer and its strided layers, batch 1 and 64, both backends)
# with their heuristic split of K and 2, 4 and 8 times more (where the lowering offers it; at batch 1 the strided
# layers' direct kernels against the GEMM in 64x64, 32x32 and 64x64x8 split 3), each forced by a tuning cache written
# below, two rounds (2026-11-27, thirteenth session; docs/PERFORMANCE.md). The tests first: the every-candidate case
# with up to 116 splits and the lowering's offers, on both backends.
#
# The rows are the configs that day's comparison build offered (splits x2, x4 and x8 of the rule before); the rule of
# 512 workgroups and its offers (half, x2, x4 and 64..512 splits) came after it, and offer all but three: the x8 rows
# of the 3x3 layers at batch 64 (408, 112 and 24 splits), which a later build replaces by its heuristic with a warning.
#
# Here: TESTS=1 bash tools/gpu/prepare-goals.sh. There, carrying .gpu and .gl: bash tools/gpu/run-wgrad-splits.sh
# (PART=heuristic: the tests, then the same layers with the heuristics alone, an empty tuning cache, two rounds).
set -uo pipefail
source tools/gpu/env.sh
[ -f .gpu/pack.tar.xz ] && tar xJf .gpu/pack.tar.xz -C .gpu
R=/tmp/wgrad_splits
mkdir -p $R
layers=conv1,layer2.0.conv1,layer2.0.downsample,layer3.0.conv1,layer3.0.downsample,layer4.0.conv1,layer4.0.downsample
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
awk '/^ROWS_S/ {f = $0; next} {print f "\t" $0}' > $R/rows.txt <<'ROWS'
ROWS_S1
conv2d_grad_weight	n1_c3_h224_w224_k64_r7x7_s2x2_p3x3_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=64
conv2d_grad_weight	n64_c3_h224_w224_k64_r7x7_s2x2_p3x3_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=64
conv2d_grad_weight	n1_c64_h56_w56_k128_r3x3_s2x2_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=12
conv2d_grad_weight	n64_c64_h56_w56_k128_r3x3_s2x2_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=51
conv2d_grad_weight	n1_c64_h56_w56_k128_r1x1_s2x2_p0x0_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=6
conv2d_grad_weight	n64_c64_h56_w56_k128_r1x1_s2x2_p0x0_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=64
conv2d_grad_weight	n1_c128_h28_w28_k256_r3x3_s2x2_p1x1_d1x1_g1	f32	block_rows=3,block_cols=3,wg=32,splits=1,row_mode=1
conv2d_grad_weight	n64_c128_h28_w28_k256_r3x3_s2x2_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=14
conv2d_grad_weight	n1_c128_h28_w28_k256_r1x1_s2x2_p0x0_d1x1_g1	f32	block_rows=1,block_cols=1,wg=32,splits=1,row_mode=1
conv2d_grad_weight	n64_c128_h28_w28_k256_r1x1_s2x2_p0x0_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=64
conv2d_grad_weight	n1_c256_h14_w14_k512_r3x3_s2x2_p1x1_d1x1_g1	f32	block_rows=3,block_cols=3,wg=32,splits=1,row_mode=1
conv2d_grad_weight	n64_c256_h14_w14_k512_r3x3_s2x2_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=3
conv2d_grad_weight	n1_c256_h14_w14_k512_r1x1_s2x2_p0x0_d1x1_g1	f32	block_rows=1,block_cols=1,wg=32,splits=1,row_mode=1
conv2d_grad_weight	n64_c256_h14_w14_k512_r1x1_s2x2_p0x0_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=32
ROWS_S2
conv2d_grad_weight	n1_c3_h224_w224_k64_r7x7_s2x2_p3x3_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=128
conv2d_grad_weight	n64_c3_h224_w224_k64_r7x7_s2x2_p3x3_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=128
conv2d_grad_weight	n1_c64_h56_w56_k128_r3x3_s2x2_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=24
conv2d_grad_weight	n64_c64_h56_w56_k128_r3x3_s2x2_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=102
conv2d_grad_weight	n1_c64_h56_w56_k128_r1x1_s2x2_p0x0_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=12
conv2d_grad_weight	n64_c64_h56_w56_k128_r1x1_s2x2_p0x0_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=128
conv2d_grad_weight	n1_c128_h28_w28_k256_r3x3_s2x2_p1x1_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=1
conv2d_grad_weight	n64_c128_h28_w28_k256_r3x3_s2x2_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=28
conv2d_grad_weight	n1_c128_h28_w28_k256_r1x1_s2x2_p0x0_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=1
conv2d_grad_weight	n64_c128_h28_w28_k256_r1x1_s2x2_p0x0_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=128
conv2d_grad_weight	n1_c256_h14_w14_k512_r3x3_s2x2_p1x1_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=1
conv2d_grad_weight	n64_c256_h14_w14_k512_r3x3_s2x2_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=6
conv2d_grad_weight	n1_c256_h14_w14_k512_r1x1_s2x2_p0x0_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=1
conv2d_grad_weight	n64_c256_h14_w14_k512_r1x1_s2x2_p0x0_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=64
ROWS_S4
conv2d_grad_weight	n1_c3_h224_w224_k64_r7x7_s2x2_p3x3_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=64
conv2d_grad_weight	n64_c3_h224_w224_k64_r7x7_s2x2_p3x3_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=256
conv2d_grad_weight	n1_c64_h56_w56_k128_r3x3_s2x2_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=12
conv2d_grad_weight	n64_c64_h56_w56_k128_r3x3_s2x2_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=204
conv2d_grad_weight	n1_c64_h56_w56_k128_r1x1_s2x2_p0x0_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=6
conv2d_grad_weight	n64_c64_h56_w56_k128_r1x1_s2x2_p0x0_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=256
conv2d_grad_weight	n1_c128_h28_w28_k256_r3x3_s2x2_p1x1_d1x1_g1	f32	tile_m=32,tile_n=32,tile_k=16,reg_m=2,reg_n=2,splits=1
conv2d_grad_weight	n64_c128_h28_w28_k256_r3x3_s2x2_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=56
conv2d_grad_weight	n1_c128_h28_w28_k256_r1x1_s2x2_p0x0_d1x1_g1	f32	tile_m=32,tile_n=32,tile_k=16,reg_m=2,reg_n=2,splits=1
conv2d_grad_weight	n64_c128_h28_w28_k256_r1x1_s2x2_p0x0_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=256
conv2d_grad_weight	n1_c256_h14_w14_k512_r3x3_s2x2_p1x1_d1x1_g1	f32	tile_m=32,tile_n=32,tile_k=16,reg_m=2,reg_n=2,splits=1
conv2d_grad_weight	n64_c256_h14_w14_k512_r3x3_s2x2_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=12
conv2d_grad_weight	n1_c256_h14_w14_k512_r1x1_s2x2_p0x0_d1x1_g1	f32	tile_m=32,tile_n=32,tile_k=16,reg_m=2,reg_n=2,splits=1
conv2d_grad_weight	n64_c256_h14_w14_k512_r1x1_s2x2_p0x0_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=32
ROWS_S8
conv2d_grad_weight	n1_c3_h224_w224_k64_r7x7_s2x2_p3x3_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=64
conv2d_grad_weight	n64_c3_h224_w224_k64_r7x7_s2x2_p3x3_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=512
conv2d_grad_weight	n1_c64_h56_w56_k128_r3x3_s2x2_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=12
conv2d_grad_weight	n64_c64_h56_w56_k128_r3x3_s2x2_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=408
conv2d_grad_weight	n1_c64_h56_w56_k128_r1x1_s2x2_p0x0_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=6
conv2d_grad_weight	n64_c64_h56_w56_k128_r1x1_s2x2_p0x0_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=512
conv2d_grad_weight	n1_c128_h28_w28_k256_r3x3_s2x2_p1x1_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=8,reg_m=4,reg_n=4,splits=3
conv2d_grad_weight	n64_c128_h28_w28_k256_r3x3_s2x2_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=112
conv2d_grad_weight	n1_c128_h28_w28_k256_r1x1_s2x2_p0x0_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=8,reg_m=4,reg_n=4,splits=3
conv2d_grad_weight	n64_c128_h28_w28_k256_r1x1_s2x2_p0x0_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=64
conv2d_grad_weight	n1_c256_h14_w14_k512_r3x3_s2x2_p1x1_d1x1_g1	f32	block_rows=3,block_cols=3,wg=32,splits=1,row_mode=1
conv2d_grad_weight	n64_c256_h14_w14_k512_r3x3_s2x2_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=24
conv2d_grad_weight	n1_c256_h14_w14_k512_r1x1_s2x2_p0x0_d1x1_g1	f32	block_rows=1,block_cols=1,wg=32,splits=1,row_mode=1
conv2d_grad_weight	n64_c256_h14_w14_k512_r1x1_s2x2_p0x0_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=32
ROWS
for f in 1 2 4 8; do
  echo "# spire tuning cache 1" > $R/s${f}_cache.txt
  grep "^ROWS_S$f	" $R/rows.txt | while IFS=$'\t' read -r tag op shape dtype config; do
    printf 'vulkan\t%s\tNVIDIA 580.159.04\t%s\t%s\t%s\t%s\t1\t1\n' "$gpu" "$op" "$shape" "$dtype" "$config"
    printf 'cuda\t%s\tCUDA driver 13.0\t%s\t%s\t%s\t%s\t1\t1\n' "$gpu" "$op" "$shape" "$dtype" "$config"
  done >> $R/s${f}_cache.txt
done
$B/spire_tuning_tests --gtest_filter='*EveryCandidate*gemm_many_splits*:*EveryCandidate*conv2d_grad_weight_gemm*:TunedLowering.*' 2>&1 | grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran" | tee $R/tests.txt
if [ "${PART:-compare}" = "heuristic" ]; then
  echo "# spire tuning cache 1" > $R/empty_cache.txt
  for round in 1 2; do
    $B/spire_bench_conv2d --device all --runs 30 --passes wgrad --layers $layers --tuning-cache $R/empty_cache.txt 2>&1 | grep -E " wgrad " | tee $R/heuristic_$round.txt
  done
  ROUNDS=0
fi
for round in $(seq ${ROUNDS:-2}); do
  for f in 1 2 4 8; do
    $B/spire_bench_conv2d --device all --runs 30 --passes wgrad --layers $layers --tuning-cache $R/s${f}_cache.txt 2>&1 | grep -E " wgrad " | tee $R/s${f}_$round.txt
  done
done
tar czf $OUT/wgrad_splits.tar.gz -C /tmp wgrad_splits
