#!/usr/bin/env bash
# Channels-last convolutions on tensor cores (lowering/heavy_kernels/conv2d_mma_kernel.h, channels_last_kernel.h) on
# the H100: the kernels' and the lowering's tests on cuda:0 and vulkan:0; resnet18's convolutions forward at batch 64
# in bf16 three ways in the same run: the heuristic, every layer forced onto the tensor-core kernel as stored (NCHW
# input gathered element by element, the previous heuristic's tiling), and forced channels last (conv1's 3 channels
# padded to 8); PyTorch's f16/bf16 cuDNN convolutions; the
# whole resnet18 in float16 (`spire run`) against PyTorch eager and torch.compile.
# Here: TESTS=1 bash tools/gpu/prepare-goals.sh. There, carrying .gpu and .gl: bash tools/gpu/run-channels-last-conv.sh
# (its files in $OUT/channels_last). PART=bench: the convolutions only (NO_TORCH=1: without
# PyTorch's); PART=models: only the whole models.
set -uo pipefail
source tools/gpu/env.sh
[ -f .gpu/pack.tar.xz ] && tar xJf .gpu/pack.tar.xz -C .gpu
H=${OUT:-/tmp}/channels_last
mkdir -p $H
runs=${RUNS:-30}
part=${PART:-all}
{
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
if [ "$part" = all ]; then
  # Without the validation layer: Debian's predates the cooperative-matrix extensions.
  $B/spire_lowering_heavy_tests --gtest_filter='*Conv2dMma*:*ChannelsLast*' --gtest_brief=1 2>&1 | tail -4
  $B/spire_lowering_tests --gtest_filter='*HalfConv2d*:*ComputeInF32*' --gtest_brief=1 2>&1 | tail -4
fi
} 2>&1 | tee $H/tests.txt
if [ "$part" != models ]; then
  # Tuning caches that force one tensor-core config per layer and backend (the key is the layer's shape at batch
  # BATCH, 64 unless set).
  batch=${BATCH:-64}
  name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  vdrv="NVIDIA $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
  layers="3:64:7:2:3:224 64:64:3:1:1:56 64:128:3:2:1:56 128:128:3:1:1:28 64:128:1:2:0:56 128:256:3:2:1:28 256:256:3:1:1:14
          128:256:1:2:0:28 256:512:3:2:1:14 512:512:3:1:1:7 256:512:1:2:0:14"
  force() {  # force <file> <layout: stored|nhwc>
    printf "# spire tuning cache 1\n" > $1
    for l in $layers; do
      IFS=: read cin cout k s p hw <<< "$l"
      shape="n${batch}_c${cin}_h${hw}_w${hw}_k${cout}_r${k}x${k}_s${s}x${s}_p${p}x${p}_d1x1_g1_bf16_bf16_operands"
      m=$([ $cout -ge 128 ] && echo 128 || echo 64)
      for be in cuda vulkan; do
        if [ $2 = stored ]; then
          if [ $be = vulkan ] && [ $m = 128 ]; then cfg="tile_m=128,tile_n=64,tile_k=32,warps_m=4,warps_n=2,stages=2"
          else cfg="tile_m=$m,tile_n=128,tile_k=32,warps_m=2,warps_n=4,stages=2"; fi
        else
          st=$([ $be = cuda ] && echo 3 || echo 2)
          cfg="tile_m=$m,tile_n=128,tile_k=32,warps_m=2,warps_n=4,stages=$st,channels_last=1"
        fi
        drv=$([ $be = cuda ] && echo "CUDA driver 13.0" || echo "$vdrv")
        printf "%s\t%s\t%s\tconv2d\t%s\tf32\t%s\t1\t1\n" $be "$name" "$drv" "$shape" "$cfg" >> $1
      done
    done
  }
  force /tmp/stored.tsv stored
  force /tmp/nhwc.tsv nhwc
  L=conv1,layer1.0.conv1,layer2.0.conv1,layer2.0.conv2,layer2.0.downsample,layer3.0.conv1,layer3.0.conv2,layer3.0.downsample,layer4.0.conv1,layer4.0.conv2,layer4.0.downsample
  # VARIANTS=heuristic: only the heuristic, at batch 1 and 64 and every layer (conv1 too).
  for v in ${VARIANTS:-heuristic stored nhwc}; do
    cache=/tmp/$v.tsv; layers="--batches $batch --layers $L"
    [ $v = heuristic ] && cache=/tmp/none.tsv && [ -n "${VARIANTS:-}" ] && layers="--batches 1,64"
    $B/spire_bench_conv2d --device all --runs $runs --dtype bf16 --passes fwd --tuning-cache $cache $layers \
      2>&1 | tail -50 > $H/bf16_$v.txt
  done
  [ -z "${NO_TORCH:-}" ] && python3 benchmarks/torch_matmul_conv.py --half-conv --out $H --runs $runs > /dev/null 2>&1
fi
[ "$part" = bench ] && exit 0
M=/tmp/half_models
{
python3 tools/gpu/half_resnet18.py $M 2>&1 | grep -v Warn | tee /tmp/torch_resnet18_f16.txt
python3 tools/gpu/models_table.py $B/spire $M /tmp/torch_resnet18_f16.txt 2>&1
} | tee $H/models.txt
