#!/usr/bin/env bash
# Issue 10 on the GPU machine: 3x3 stride-1 forward convolutions by Winograd's F(2x2, 3x3)
# (lowering/heavy_kernels/conv2d_winograd_kernels.h). resnet18 through `spire run` at batch 1 and 64 on cuda:0 and
# vulkan:0 beside PyTorch's eager, TF32 and torch.compile times (benchmarks/torch_models.py, same run), then the
# forward convolutions of resnet18 at batch 64 tuned on each device from a fresh cache: the table's heuristic column is
# what lowering picks by default, the best column the fastest of every candidate (Winograd with each product tiling,
# the implicit GEMM, the direct kernels).
# Pack: .gpu/pack.tar.xz holding bin/{spire,spire_bench_conv2d} (strip them: carry is 64 MiB), .gpu/models (the
#   encoder layers: benchmarks/torch_models.py --export-only encoder_op13 encoder_op17); carry .gpu, .gl.
set -uo pipefail
source tools/gpu/env.sh
[ -f .gpu/pack.tar.xz ] && tar xJf .gpu/pack.tar.xz -C .gpu
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
M=/tmp/models
mkdir -p $M && cp .gpu/models/* $M/
timeout 120 python3 benchmarks/torch_models.py $M 2>&1 | grep -v Warning > $OUT/torch_models.txt
grep "resnet18" $OUT/torch_models.txt > /tmp/torch_resnet18.txt
timeout 100 python3 tools/gpu/models_table.py $B/spire $M /tmp/torch_resnet18.txt 2>&1 | tee $OUT/models.txt
for dev in cuda:0 vulkan:0; do
  timeout 150 $B/spire_bench_conv2d --device $dev --batches 64 --passes fwd --runs 20 --tune --tuning-cache /tmp/tc.txt \
    --csv $OUT/conv_tuned_${dev%:0}.csv > $OUT/conv_tuned_${dev%:0}.txt 2>&1
  grep -E "^conv2d " $OUT/conv_tuned_${dev%:0}.txt
done
