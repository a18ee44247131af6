#!/usr/bin/env bash
# Issue 10 on the GPU machine, old build against new in one run: the input gradient of 3x3 stride-1 convolutions by
# Winograd's F(2x2, 3x3) (resnet18's convolutions at batch 64, forward and input gradient, on cuda:0 and vulkan:0) and
# rows of several channels per invocation for small-channel convolutions (LeNet's step at batch 8192 and 64 with the
# slowest launches). Also lists what the Vulkan driver offers for cooperative matrices (tools/gpu/vulkan_coopmat_query.py).
# Pack: .gpu/pack.tar.xz holding old/ and bin/ with spire, spire_bench_conv2d, spire_bench_lenet_step (stripped; old/
#   from the commit before); carry .gpu, .gl.
set -uo pipefail
source tools/gpu/env.sh
[ -f .gpu/pack.tar.xz ] && tar xJf .gpu/pack.tar.xz -C .gpu
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 30 python3 tools/gpu/vulkan_coopmat_query.py 2>&1 | tee $OUT/vulkan_coopmat.txt
for dev in cuda:0 vulkan:0; do
  for v in old bin; do
    echo "== LeNet step on $dev ($v)"
    timeout 100 .gpu/$v/spire_bench_lenet_step --device $dev --batch 8192 --runs 20 --top 6 2>&1 | grep -v "^$" | tail -8
    timeout 100 .gpu/$v/spire_bench_lenet_step --device $dev --batch 64 --runs 50 --top 0 2>&1 | grep -E "step"
  done
done
for dev in cuda:0 vulkan:0; do
  for v in old bin; do
    echo "== resnet18 convolutions at batch 64 on $dev ($v)"
    timeout 150 .gpu/$v/spire_bench_conv2d --device $dev --batches 64 --passes fwd,dgrad --runs 20 \
      --csv $OUT/conv_${dev%:0}_$v.csv > $OUT/conv_${dev%:0}_$v.txt 2>&1
    grep -E "dgrad" $OUT/conv_${dev%:0}_$v.txt
  done
done
