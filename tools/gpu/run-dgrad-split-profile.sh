#!/usr/bin/env bash
# Each launch of the strided input gradients' split-K programs at batch 1 (the phases' partial sums, then their sum),
# one config at a time through a one-line tuning cache, on vulkan:0 and cuda:0 (2026-11-27, twelfth session: the
# tuner saw split configs 3-5x slower on vulkan:0 only). Graphs and inputs: .gpu/prof (made here by the session's
# snippet: conv2d_grad_input of resnet18's layer2/3/4 3x3 and layer2 1x1 strided layers, random inputs).
# Here: TESTS=1 bash tools/gpu/prepare-goals.sh; there, carrying .gpu and .gl: bash tools/gpu/run-dgrad-split-profile.sh
set -uo pipefail
source tools/gpu/env.sh
[ -f .gpu/pack.tar.xz ] && tar xJf .gpu/pack.tar.xz -C .gpu
declare -A shape=([l2]=n1_c64_h56_w56_k128_r3x3_s2x2_p1x1_d1x1_g1 [l3]=n1_c128_h28_w28_k256_r3x3_s2x2_p1x1_d1x1_g1
                  [l4]=n1_c256_h14_w14_k512_r3x3_s2x2_p1x1_d1x1_g1 [d2]=n1_c64_h56_w56_k128_r1x1_s2x2_p0x0_d1x1_g1)
configs=${CONFIGS:-"tile_m=16,tile_n=16,tile_k=16,reg_m=1,reg_n=1 tile_m=16,tile_n=16,tile_k=16,reg_m=1,reg_n=1,splits=2 tile_m=32,tile_n=32,tile_k=32,reg_m=2,reg_n=2 tile_m=32,tile_n=32,tile_k=32,reg_m=2,reg_n=2,splits=4"}
for dev in vulkan:0 cuda:0; do
  $B/spire devices 2>/dev/null | grep "$dev" | head -1
  if [ $dev = cuda:0 ]; then key="cuda	NVIDIA H100 80GB HBM3	CUDA driver 13.0"; else key="vulkan	NVIDIA H100 80GB HBM3	NVIDIA 580.159.04"; fi
  for l in ${LAYERS:-l2 l4 d2}; do
    for c in $configs; do
      printf '# spire tuning cache 1\n%s\tconv2d_grad_input\t%s\tf32\t%s\t1\t1\n' "$key" "${shape[$l]}" "$c" > /tmp/tc1.txt
      echo "== $dev $l $c"
      $B/spire graph eval .gpu/prof/$l.graph --inputs .gpu/prof/$l.safetensors --outputs /tmp/o.st --device $dev \
        --bench 50 --profile --tuning-cache /tmp/tc1.txt 2>&1 | grep -E "^ +[0-9]+ |median|warning" | cut -c1-150
    done
  done
done
