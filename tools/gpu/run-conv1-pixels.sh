#!/usr/bin/env bash
# Issue 10 on the GPU machine: LeNet's first convolution at batch 8192 with several result elements per invocation
# (Conv2dConfig::pixels, the shared-weights path). Each config a one-line tuning cache, a fresh process per config,
# `spire lenet bench --profile` on both backends; then cuda:0's tuner over all candidates. Pack spire.
set -uo pipefail
source tools/gpu/env.sh
shape=n8192_c1_h28_w28_k6_r5x5_s1x1_p2x2_d1x1_g1
for dev in cuda:0 vulkan:0; do
  if [ $dev = cuda:0 ]; then id="cuda	NVIDIA H100 80GB HBM3	CUDA driver 13.0"; else id="vulkan	NVIDIA H100 80GB HBM3	NVIDIA 580.159.04"; fi
  for cfg in ${CONFIGS:-128,1 128,4 128,8 128,16 64,8 256,8 256,16}; do
    IFS=, read wg px <<< "$cfg"
    f=/tmp/tc_${dev/:/}_${wg}_${px}.tsv
    extra=""; [ $px -gt 1 ] && extra=",pixels=$px"
    printf "# spire tuning cache 1\n$id\tconv2d\t$shape\tf32\trows=0,wg=$wg,c_block=6,shared_w=1$extra\t1\t1\n" > $f
    r=$($B/spire lenet bench --batch 8192 --device $dev --runs 20 --profile --tuning-cache $f 2>&1 | grep -E " conv2d_0 |^$dev " | awk '{printf "%s %s  ", $2, $NF}')
    echo "$dev wg$wg px$px: $r"
  done
done
echo "== cuda:0 tuner"
timeout 400 $B/spire lenet bench --batch 8192 --device cuda:0 --runs 20 --tune --tuning-cache $OUT/tc_cuda.tsv 2>&1 | tail -2
grep -P "\tconv2d\t" $OUT/tc_cuda.tsv | cut -f5-9
echo "== batch 64 heuristic"
for dev in cuda:0 vulkan:0; do $B/spire lenet bench --batch 64 --device $dev --runs 30 --tuning-cache /tmp/none.txt 2>&1 | grep -E "^$dev "; done
