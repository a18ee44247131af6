#!/usr/bin/env bash
# Issue 10 item 2 on the GPU machine: the fp32 tiled GEMM (matmul and every implicit-GEMM convolution) asking ptxas
# for two workgroups per SM (kir's min_workgroups_per_core, PTX .minnctapersm: 128 registers instead of 130 for the
# 8x8 tiling, so two 256-invocation workgroups fit where one did). Before and after in the same run: .gpu/old holds
# the binaries of the commit before (same sources otherwise), .gpu/bin the new ones. fp32 matmul, the resnet18
# convolutions at batch 64, LeNet's step at batch 8192, and resnet18 / the encoder layer through `spire run`.
# Pack: .gpu/old/{spire,spire_bench_matmul,spire_bench_conv2d,spire_bench_lenet_step} (previous commit),
#   .gpu/bin/ (this one), .gpu/models (build/tests/onnx/models/encoder*); carry .gpu, .gl.
set -uo pipefail
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
shapes=1024,2048,4096,8192,512x768x2304,512x3072x768,64x512x1000
for v in old bin; do
  echo "== fp32 matmul on cuda:0 ($v)"
  timeout 200 .gpu/$v/spire_bench_matmul --device cuda:0 --runs 20 --shapes $shapes 2>&1 | grep -E "^cuda:0 " | tee $OUT/matmul_$v.txt
done
for v in old bin; do
  echo "== LeNet step at batch 8192 on cuda:0 ($v)"
  timeout 100 .gpu/$v/spire_bench_lenet_step --device cuda:0 --batch 8192 --runs 20 --top 0 2>&1 | grep -E "step" | head -2
done
bash tools/gpu/old-vs-new-models.sh
