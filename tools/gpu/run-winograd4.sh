#!/usr/bin/env bash
# Winograd's F(4x4, 3x3) against F(2x2, 3x3) on resnet18's four 3x3 stride-1 layers (forward and both gradients, batch
# 1 and 64, both backends; each tile size forced by a tuning cache written below, in the same run), PyTorch beside
# them, then resnet18's inference with the heuristic (F(4x4, 3x3) for the forward) and with F(2x2, 3x3) forced
# (2026-11-27, thirteenth session; docs/PERFORMANCE.md). The tests first: every Winograd candidate against float64 and
# the precision test at resnet18's channel counts on both backends.
#
# Here: TESTS=1 bash tools/gpu/prepare-goals.sh. There, carrying .gpu and .gl: bash tools/gpu/run-winograd4.sh
# (ROUNDS=1 TORCH=0 MODELS=0 for the kernels alone, one round). PART=heuristic instead: the tests, then every resnet18
# convolution with the heuristic configs (an empty tuning cache) next to PyTorch, and the models.
set -uo pipefail
source tools/gpu/env.sh
[ -f .gpu/pack.tar.xz ] && tar xJf .gpu/pack.tar.xz -C .gpu
R=/tmp/wino4
mkdir -p $R/f2 $R/f4 $R/heuristic
echo "# spire tuning cache 1" > $R/empty_cache.txt
layers=layer1.0.conv1,layer2.0.conv2,layer3.0.conv2,layer4.0.conv2
# A cache per tile size, keyed by this GPU's name and the 580 driver's version texts (a row under other keys is not used:
# the benchmark's "config from" column then says "heuristic").
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
write_cache() {  # tile, file
  echo "# spire tuning cache 1" > $2
  awk -v t="ROWS_F$1" '/^ROWS_F/ {on = ($0 == t); next} on' > $R/rows_$1.txt <<'ROWS'
ROWS_F2
conv2d	n1_c64_h56_w56_k64_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=8,reg_n=8,winograd=2
conv2d_grad_input	n1_c64_h56_w56_k64_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=8,reg_n=8,winograd=2
conv2d_grad_weight	n1_c64_h56_w56_k64_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=4,winograd=2
conv2d	n64_c64_h56_w56_k64_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=8,reg_n=8,winograd=2
conv2d_grad_input	n64_c64_h56_w56_k64_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=8,reg_n=8,winograd=2
conv2d_grad_weight	n64_c64_h56_w56_k64_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=8,reg_n=8,splits=32,winograd=2
conv2d	n1_c128_h28_w28_k128_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=8,reg_n=8,winograd=2
conv2d_grad_input	n1_c128_h28_w28_k128_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=8,reg_n=8,winograd=2
conv2d_grad_weight	n1_c128_h28_w28_k128_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,winograd=2
conv2d	n64_c128_h28_w28_k128_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,winograd=2
conv2d_grad_input	n64_c128_h28_w28_k128_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,winograd=2
conv2d_grad_weight	n64_c128_h28_w28_k128_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=8,reg_n=8,splits=8,winograd=2
conv2d	n1_c256_h14_w14_k256_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=16,tile_n=16,tile_k=16,reg_m=1,reg_n=1,winograd=2
conv2d_grad_input	n1_c256_h14_w14_k256_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=16,tile_n=16,tile_k=16,reg_m=1,reg_n=1,winograd=2
conv2d_grad_weight	n1_c256_h14_w14_k256_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,winograd=2
conv2d	n64_c256_h14_w14_k256_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,winograd=2
conv2d_grad_input	n64_c256_h14_w14_k256_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,winograd=2
conv2d_grad_weight	n64_c256_h14_w14_k256_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=8,reg_n=8,splits=2,winograd=2
conv2d	n1_c512_h7_w7_k512_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=16,tile_n=16,tile_k=16,reg_m=1,reg_n=1,winograd=2
conv2d_grad_input	n1_c512_h7_w7_k512_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=16,tile_n=16,tile_k=16,reg_m=1,reg_n=1,winograd=2
conv2d_grad_weight	n1_c512_h7_w7_k512_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,winograd=2
conv2d	n64_c512_h7_w7_k512_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,winograd=2
conv2d_grad_input	n64_c512_h7_w7_k512_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,winograd=2
conv2d_grad_weight	n64_c512_h7_w7_k512_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,winograd=2
ROWS_F4
conv2d	n1_c64_h56_w56_k64_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=8,reg_n=8,winograd=4
conv2d_grad_input	n1_c64_h56_w56_k64_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=8,reg_n=8,winograd=4
conv2d_grad_weight	n1_c64_h56_w56_k64_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,winograd=4
conv2d	n64_c64_h56_w56_k64_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=8,reg_n=8,winograd=4
conv2d_grad_input	n64_c64_h56_w56_k64_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=8,reg_n=8,winograd=4
conv2d_grad_weight	n64_c64_h56_w56_k64_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=8,reg_n=8,splits=16,winograd=4
conv2d	n1_c128_h28_w28_k128_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=16,tile_n=16,tile_k=16,reg_m=1,reg_n=1,winograd=4
conv2d_grad_input	n1_c128_h28_w28_k128_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=16,tile_n=16,tile_k=16,reg_m=1,reg_n=1,winograd=4
conv2d_grad_weight	n1_c128_h28_w28_k128_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,winograd=4
conv2d	n64_c128_h28_w28_k128_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,winograd=4
conv2d_grad_input	n64_c128_h28_w28_k128_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,winograd=4
conv2d_grad_weight	n64_c128_h28_w28_k128_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=64,tile_n=64,tile_k=16,reg_m=8,reg_n=8,splits=4,winograd=4
conv2d	n1_c256_h14_w14_k256_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=16,tile_n=16,tile_k=16,reg_m=1,reg_n=1,winograd=4
conv2d_grad_input	n1_c256_h14_w14_k256_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=16,tile_n=16,tile_k=16,reg_m=1,reg_n=1,winograd=4
conv2d_grad_weight	n1_c256_h14_w14_k256_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,winograd=4
conv2d	n64_c256_h14_w14_k256_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,winograd=4
conv2d_grad_input	n64_c256_h14_w14_k256_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,winograd=4
conv2d_grad_weight	n64_c256_h14_w14_k256_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,splits=2,winograd=4
conv2d	n1_c512_h7_w7_k512_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=16,tile_n=16,tile_k=16,reg_m=1,reg_n=1,winograd=4
conv2d_grad_input	n1_c512_h7_w7_k512_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=16,tile_n=16,tile_k=16,reg_m=1,reg_n=1,winograd=4
conv2d_grad_weight	n1_c512_h7_w7_k512_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,winograd=4
conv2d	n64_c512_h7_w7_k512_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,winograd=4
conv2d_grad_input	n64_c512_h7_w7_k512_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,winograd=4
conv2d_grad_weight	n64_c512_h7_w7_k512_r3x3_s1x1_p1x1_d1x1_g1	f32	tile_m=128,tile_n=128,tile_k=8,reg_m=8,reg_n=8,winograd=4
ROWS
  while IFS=$'\t' read -r op shape dtype config; do
    printf 'vulkan\t%s\tNVIDIA 580.159.04\t%s\t%s\t%s\t%s\t1\t1\n' "$gpu" "$op" "$shape" "$dtype" "$config" >> $2
    printf 'cuda\t%s\tCUDA driver 13.0\t%s\t%s\t%s\t%s\t1\t1\n' "$gpu" "$op" "$shape" "$dtype" "$config" >> $2
  done < $R/rows_$1.txt
}
write_cache 2 $R/f2_cache.txt
write_cache 4 $R/f4_cache.txt
$B/spire_tuning_tests --gtest_filter='*EveryCandidate*winograd*:*WinogradPrecision*:TunedLowering.*' 2>&1 | grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|^(vulkan|cuda):0 layer" | tee $R/tests.txt
if [ "${PART:-compare}" = "heuristic" ]; then
  $B/spire_bench_conv2d --device all --runs 30 --tuning-cache $R/empty_cache.txt --csv $R/heuristic/spire_conv2d.csv 2>&1 | grep -E " (fwd|dgrad|wgrad) " | tee $R/heuristic.txt
  python3 benchmarks/torch_matmul_conv.py --out $R/heuristic --runs 30 > $R/torch.txt 2>&1
  python3 tools/gpu/speed_table.py $R/heuristic -o $R/heuristic/speed.md > /dev/null
  grep -E "^\| (layer|conv1)|geometric" $R/heuristic/speed.md
  ROUNDS=0 TORCH=0
fi
for round in $(seq ${ROUNDS:-2}); do
  for f in f4 f2; do
    $B/spire_bench_conv2d --device all --runs 30 --layers $layers --tuning-cache $R/${f}_cache.txt --csv $R/$f/spire_conv2d.csv 2>&1 | grep -E " (fwd|dgrad|wgrad) " | tee $R/${f}_$round.txt
  done
done
if [ "${TORCH:-1}" = "1" ]; then
  python3 benchmarks/torch_matmul_conv.py --out $R/f4 --runs 30 > $R/torch.txt 2>&1
  cp $R/f4/torch_conv2d.csv $R/f2/
  for f in f2 f4; do python3 tools/gpu/speed_table.py $R/$f -o $R/$f/speed.md > /dev/null; echo "## $f"; grep -E "layer1.0.conv1|layer2.0.conv2|layer3.0.conv2|layer4.0.conv2|geometric" $R/$f/speed.md; done
fi
if [ "${MODELS:-1}" = "1" ]; then
  M=/tmp/models
  mkdir -p $M && cp .gpu/models/* $M/
  python3 benchmarks/torch_models.py $M 2>&1 | grep -v Warning | tee $R/torch_models.txt
  python3 tools/gpu/models_table.py $B/spire $M $R/torch_models.txt 2>&1 | tee $R/models_heuristic.txt
  SPIRE_RUN_ARGS="--tuning-cache $R/f2_cache.txt" python3 tools/gpu/models_table.py $B/spire $M $R/torch_models.txt 2>&1 | tee $R/models_f2.txt
fi
tar czf $OUT/wino4.tar.gz -C /tmp wino4
