#!/usr/bin/env bash
# Half-precision convolutions on tensor cores (lowering/heavy_kernels/conv2d_mma_kernel.h) on the H100: the kernel's
# and the lowering's tests on cuda:0 and vulkan:0; resnet18's convolutions forward in bf16 and f16 with the heuristic
# (tensor cores where they pay, else widened to f32); the tuner over both families for one 3x3 stride-1 layer at batch
# 64 (Winograd's); resnet18 exported in float16 run whole by `spire run` against PyTorch eager and torch.compile in
# float16. PART=forced: no tests, and instead of the tuner the tensor-core kernel forced on the 3x3 stride-1 layers at
# batch 64. With PART=all also f32 and PyTorch's f16/bf16 convolutions (cuDNN, NCHW) and the bf16 matmul (the
# tensor-core body both share) at 4096 and 8192.
# Here: TESTS=1 bash tools/gpu/prepare-goals.sh. There, carrying .gpu and .gl: bash tools/gpu/run-half-conv.sh
# (its files in $OUT/half_conv, so that what a run finished comes back even if it is cut short).
set -uo pipefail
source tools/gpu/env.sh
[ -f .gpu/pack.tar.xz ] && tar xJf .gpu/pack.tar.xz -C .gpu
H=${OUT:-/tmp}/half_conv
mkdir -p $H
runs=${RUNS:-30}
{
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
[ "${PART:-}" = forced ] || {
# Tests without the validation layer: Debian's predates the cooperative-matrix extensions.
$B/spire_lowering_heavy_tests --gtest_filter='*Conv2dMma*' --gtest_brief=1 2>&1 | tail -3
$B/spire_lowering_tests --gtest_filter='*HalfConv2d*:*ComputeInF32*' --gtest_brief=1 2>&1 | tail -3
}
} 2>&1 | tee $H/tests.txt
for dt in bf16 f16; do
  $B/spire_bench_conv2d --device all --runs $runs --dtype $dt --tuning-cache /tmp/none.txt --csv $H/spire_conv2d_$dt.csv > /dev/null 2>&1
done
if [ "${PART:-}" = all ]; then
  $B/spire_bench_conv2d --device all --runs $runs --passes fwd --tuning-cache /tmp/none.txt --csv $H/spire_conv2d_f32.csv > /dev/null 2>&1
  python3 benchmarks/torch_matmul_conv.py --half-conv --out $H --runs $runs > /dev/null 2>&1
  $B/spire_bench_matmul --device all --runs $runs --dtype bf16 --shapes 4096,8192 --tuning-cache /tmp/none.txt 2>&1 | tee $H/spire_matmul_bf16.txt
fi
if [ "${PART:-}" = forced ]; then
  # The tensor-core kernel forced (a tuning cache that names its heuristic tiling) on the 3x3 stride-1 layers at batch
  # 64, where the heuristic widens to f32 for Winograd: is it faster there?
  name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  vdrv="NVIDIA $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
  printf "# spire tuning cache 1\n" > /tmp/forced.tsv
  for spec in "c64_h56_w56_k64:tile_m=64,tile_n=128,tile_k=32,warps_m=2,warps_n=4,stages=2" \
              "c128_h28_w28_k128:tile_m=128,tile_n=64,tile_k=32,warps_m=4,warps_n=2,stages=2" \
              "c256_h14_w14_k256:tile_m=128,tile_n=64,tile_k=32,warps_m=4,warps_n=2,stages=2" \
              "c512_h7_w7_k512:tile_m=128,tile_n=64,tile_k=32,warps_m=4,warps_n=2,stages=2"; do
    shape="n64_${spec%%:*}_r3x3_s1x1_p1x1_d1x1_g1_bf16_bf16_operands"
    for be in "cuda	CUDA driver 13.0" "vulkan	$vdrv"; do
      printf "%s\t%s\t%s\tconv2d\t%s\tf32\t%s\t1\t1\n" "${be%%	*}" "$name" "${be#*	}" "$shape" "${spec#*:}" >> /tmp/forced.tsv
    done
  done
  $B/spire_bench_conv2d --device all --runs $runs --dtype bf16 --batches 64 --tuning-cache /tmp/forced.tsv \
    --layers layer1.0.conv1,layer2.0.conv2,layer3.0.conv2,layer4.0.conv2 --csv $H/spire_conv2d_bf16_forced.csv > /dev/null 2>&1
elif [ -n "${TUNE_LAYERS-layer3.0.conv2}" ]; then  # TUNE_LAYERS= (empty): no tuning
  $B/spire_bench_conv2d --device all --runs $runs --dtype bf16 --batches 64 --tune --tuning-cache $H/tuned.txt \
    --layers ${TUNE_LAYERS-layer3.0.conv2} > /dev/null 2>&1
fi
M=/tmp/half_models
{
python3 tools/gpu/half_resnet18.py $M 2>&1 | grep -v Warn | tee /tmp/torch_resnet18_f16.txt
python3 tools/gpu/models_table.py $B/spire $M /tmp/torch_resnet18_f16.txt 2>&1
} | tee $H/models.txt
