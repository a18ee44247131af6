#!/usr/bin/env bash
# The weight gradients of resnet18's four 3x3 stride-1 layers (batch 1 and 64, both backends) by Winograd against the
# configs they took before it (the previous heuristics, given as a tuning cache written below), in the same run, with
# PyTorch's times beside them (2026-11-27, eleventh session; docs/PERFORMANCE.md).
#
# Here: TESTS=1 bash tools/gpu/prepare-goals.sh. There, carrying .gpu and .gl: bash tools/gpu/run-winograd-wgrad-before-after.sh
# (ROUNDS=1 TORCH=0: one round of both builds' configs, no PyTorch).
set -uo pipefail
source tools/gpu/env.sh
[ -f .gpu/pack.tar.xz ] && tar xJf .gpu/pack.tar.xz -C .gpu
R=/tmp/wgrad2
mkdir -p $R/before $R/after
layers=layer1.0.conv1,layer2.0.conv2,layer3.0.conv2,layer4.0.conv2
# The device fields are those NVIDIA's drivers reported on the H100 (driver 580.159.04); elsewhere the cache is not used.
{
  echo "# spire tuning cache 1"
  cat <<'ROWS'
vulkan	NVIDIA H100 80GB HBM3	NVIDIA 580.159.04	conv2d_grad_weight	n1_c64_h56_w56_k64_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=24	1	1
vulkan	NVIDIA H100 80GB HBM3	NVIDIA 580.159.04	conv2d_grad_weight	n64_c64_h56_w56_k64_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=28	1	1
vulkan	NVIDIA H100 80GB HBM3	NVIDIA 580.159.04	conv2d_grad_weight	n1_c128_h28_w28_k128_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=12	1	1
vulkan	NVIDIA H100 80GB HBM3	NVIDIA 580.159.04	conv2d_grad_weight	n64_c128_h28_w28_k128_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=28	1	1
vulkan	NVIDIA H100 80GB HBM3	NVIDIA 580.159.04	conv2d_grad_weight	n1_c256_h14_w14_k256_r3x3_s1x1_p1x1_d1x1_g1	f32	block_rows=3,block_cols=3,wg=32,splits=1,row_mode=1	1	1
vulkan	NVIDIA H100 80GB HBM3	NVIDIA 580.159.04	conv2d_grad_weight	n64_c256_h14_w14_k256_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=7	1	1
vulkan	NVIDIA H100 80GB HBM3	NVIDIA 580.159.04	conv2d_grad_weight	n1_c512_h7_w7_k512_r3x3_s1x1_p1x1_d1x1_g1	f32	block_rows=3,block_cols=3,wg=32,splits=1,row_mode=1	1	1
vulkan	NVIDIA H100 80GB HBM3	NVIDIA 580.159.04	conv2d_grad_weight	n64_c512_h7_w7_k512_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=1	1	1
cuda	NVIDIA H100 80GB HBM3	CUDA driver 13.0	conv2d_grad_weight	n1_c64_h56_w56_k64_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=24	1	1
cuda	NVIDIA H100 80GB HBM3	CUDA driver 13.0	conv2d_grad_weight	n64_c64_h56_w56_k64_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=28	1	1
cuda	NVIDIA H100 80GB HBM3	CUDA driver 13.0	conv2d_grad_weight	n1_c128_h28_w28_k128_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=12	1	1
cuda	NVIDIA H100 80GB HBM3	CUDA driver 13.0	conv2d_grad_weight	n64_c128_h28_w28_k128_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=28	1	1
cuda	NVIDIA H100 80GB HBM3	CUDA driver 13.0	conv2d_grad_weight	n1_c256_h14_w14_k256_r3x3_s1x1_p1x1_d1x1_g1	f32	block_rows=3,block_cols=3,wg=32,splits=1,row_mode=1	1	1
cuda	NVIDIA H100 80GB HBM3	CUDA driver 13.0	conv2d_grad_weight	n64_c256_h14_w14_k256_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=7	1	1
cuda	NVIDIA H100 80GB HBM3	CUDA driver 13.0	conv2d_grad_weight	n1_c512_h7_w7_k512_r3x3_s1x1_p1x1_d1x1_g1	f32	block_rows=3,block_cols=3,wg=32,splits=1,row_mode=1	1	1
cuda	NVIDIA H100 80GB HBM3	CUDA driver 13.0	conv2d_grad_weight	n64_c512_h7_w7_k512_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=1	1	1
ROWS
} > $R/before_cache.txt
$B/spire_tuning_tests --gtest_filter='*EveryCandidate*grad_weight*:TunedLowering.*' 2>&1 | grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran" | tee $R/tests.txt
for round in $(seq ${ROUNDS:-2}); do
  $B/spire_bench_conv2d --device all --runs 30 --passes wgrad --layers $layers --csv $R/after/spire_conv2d.csv 2>&1 | grep -E "wgrad" | tee $R/after_$round.txt
  $B/spire_bench_conv2d --device all --runs 30 --passes wgrad --layers $layers --tuning-cache $R/before_cache.txt --csv $R/before/spire_conv2d.csv 2>&1 | grep -E "wgrad" | tee $R/before_$round.txt
done
[ "${TORCH:-1}" = "1" ] && python3 benchmarks/torch_matmul_conv.py --out $R/after --runs 30 > $R/torch.txt 2>&1
cp $R/after/torch_conv2d.csv $R/before/ 2>/dev/null
for d in before after; do python3 tools/gpu/speed_table.py $R/$d -o $R/$d/speed.md > /dev/null; echo "## $d"; grep -E "wgrad|geometric" $R/$d/speed.md | grep -E "layer1.0.conv1|layer2.0.conv2|layer3.0.conv2|layer4.0.conv2|geometric"; done
tar czf $OUT/wgrad2.tar.gz -C /tmp wgrad2
