#!/usr/bin/env bash
# Issue 10 item 2 on the GPU machine: the fp32 tiled GEMM (matmul and every implicit-GEMM convolution) reading its
# workgroup-memory slices 16 bytes at a time (kir::LoadSharedVector) over 8x4 subgroup patches, staging A and B by
# 16-byte reads (kir::LoadBufferVector), without edge checks on whole-tile extents. Before and after in the same run: .gpu/old holds the binaries of the commit before, .gpu/bin
# the new ones. Part 1 (default): fp32 matmul on cuda:0 and vulkan:0, LeNet's step at batch 8192 on both. Part 2
# (`models`): the resnet18 convolutions at batch 64 on cuda:0, resnet18 / the encoder layer through `spire run`.
# Pack: .gpu/{old,bin}/{spire,spire_bench_matmul,spire_bench_conv2d,spire_bench_lenet_step}, .gpu/models
#   (benchmarks/torch_models.py --export-only encoder_op13 encoder_op17); carry .gpu, .gl.
set -uo pipefail
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
shapes=1024,2048,4096,8192,512x768x2304,512x3072x768,64x512x1000
if [ "${1:-}" != models ]; then
  python3 benchmarks/torch_matmul_conv.py --runs 30 --matmul-only 2>&1 | tee $OUT/torch_matmul.txt | tail -14
  for dev in cuda:0 vulkan:0; do
    for v in old bin; do
      echo "== fp32 matmul on $dev ($v)"
      timeout 200 .gpu/$v/spire_bench_matmul --device $dev --runs 20 --shapes $shapes 2>&1 | grep -E "^$dev " | tee $OUT/matmul_${dev%:0}_$v.txt
    done
  done
  for dev in cuda:0 vulkan:0; do
    for v in old bin; do
      echo "== LeNet step at batch 8192 on $dev ($v)"
      timeout 100 .gpu/$v/spire_bench_lenet_step --device $dev --batch 8192 --runs 20 --top 0 2>&1 | grep -E "step" | head -2
    done
  done
  exit 0
fi
bash tools/gpu/old-vs-new-models.sh
