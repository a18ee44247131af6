#!/usr/bin/env bash
# Issue 10 on the GPU machine: conv2d_grad_weight's staged row mode (whole images through workgroup memory) on LeNet's
# two weight gradients at batch 8192. Each config set is a tuning cache of two lines, timed in a fresh process with
# `spire lenet bench --profile` on both backends (the weight-gradient launches and the step); then what cuda:0's
# tuner picks among all candidates. Pack spire (and spire-base, the binary from before, when comparing).
set -uo pipefail
source tools/gpu/env.sh
c2=n8192_c6_h14_w14_k16_r5x5_s1x1_p2x2_d1x1_g1
c1=n8192_c1_h28_w28_k6_r5x5_s1x1_p2x2_d1x1_g1
sets=${SETS:-"heuristic 32,2,28:64,1,220 64,2,28:64,2,440 64,1,14:128,1,220 128,2,28:32,1,220"}
for dev in cuda:0 vulkan:0; do
  if [ $dev = cuda:0 ]; then id="cuda	NVIDIA H100 80GB HBM3	CUDA driver 13.0"; else id="vulkan	NVIDIA H100 80GB HBM3	NVIDIA 580.159.04"; fi
  for set in $sets; do
    f=/tmp/tc_${dev/:/}_${set//[,:]/_}.tsv
    printf "# spire tuning cache 1\n" > $f
    if [ $set != heuristic ]; then
      IFS=: read a b <<< "$set"
      for pair in "$c2 $a" "$c1 $b"; do
        read shape cfg <<< "$pair"
        IFS=, read wg cob sp <<< "$cfg"
        co=""; [ $cob -gt 1 ] && co=",co_block=$cob"
        printf "$id\tconv2d_grad_weight\t$shape\tf32\tblock_rows=5,block_cols=5,wg=$wg,splits=$sp,row_mode=1$co,staged=1\t1\t1\n" >> $f
      done
    fi
    echo "-- $dev $set"
    $B/spire lenet bench --batch 8192 --device $dev --runs 20 --profile --tuning-cache $f 2>&1 | grep -E "grad_weight_[0-9]+ .*conv2d_grad_weight_n|^$dev " | awk '{print "   ", $2, $NF, $3}'
  done
done
echo "== cuda:0 tuner"
timeout 400 $B/spire lenet bench --batch 8192 --device cuda:0 --runs 20 --tune --tuning-cache $OUT/tc_cuda.tsv 2>&1 | tail -2
grep conv2d_grad_weight $OUT/tc_cuda.tsv | cut -f5-9
