#!/usr/bin/env bash
# Issue 10 on the GPU machine: LeNet's second convolution's forward and input-gradient row kernels with the window's rows
# as a loop (Conv2dConfig::row_loop: fewer registers, more warps resident) against unrolled (the heuristic). Each config
# pair a two-line tuning cache, a fresh process per pair, `spire lenet bench --profile` on both backends; registers and
# occupancy from Nsight Compute on cuda:0; then cuda:0's tuner. Pack spire.
set -uo pipefail
source tools/gpu/env.sh
shape=n8192_c6_h14_w14_k16_r5x5_s1x1_p2x2_d1x1_g1
for dev in cuda:0 vulkan:0; do
  if [ $dev = cuda:0 ]; then id="cuda	NVIDIA H100 80GB HBM3	CUDA driver 13.0"; else id="vulkan	NVIDIA H100 80GB HBM3	NVIDIA 580.159.04"; fi
  for set in ${SETS:-heuristic 32,2:32,3 64,2:64,3 32,1:32,2 64,1:64,1}; do
    f=/tmp/tc_${dev/:/}_${set//[,:]/_}.tsv
    printf "# spire tuning cache 1\n" > $f
    if [ $set != heuristic ]; then
      IFS=: read a b <<< "$set"
      IFS=, read wg cb <<< "$a"; printf "$id\tconv2d\t$shape\tf32\trows=1,wg=$wg,c_block=$cb,row_loop=1\t1\t1\n" >> $f
      IFS=, read wg cb <<< "$b"; printf "$id\tconv2d_grad_input\t$shape\tf32\trows=1,wg=$wg,c_block=$cb,row_loop=1\t1\t1\n" >> $f
    fi
    r=$($B/spire lenet bench --batch 8192 --device $dev --runs 20 --profile --tuning-cache $f 2>&1 | grep -E " conv2d_5 | conv2d_grad_input_50 |^$dev " | awk '{printf "%s %s  ", $2, $NF}')
    echo "$dev $set: $r"
  done
done
echo "== registers (cuda:0, row loop 32,2:32,3)"
timeout 120 /usr/local/cuda/bin/ncu --kernel-name regex:"conv2d_n8192_c6|conv2d_grad_input_n8192" --launch-count 2 --section LaunchStats --section Occupancy $B/spire lenet bench --batch 8192 --device cuda:0 --runs 1 --tuning-cache /tmp/tc_cuda0_32_2_32_3.tsv 2>&1 | grep -E "^  [a-z_0-9]+.*\(|Registers Per Thread|Achieved Occupancy" | sed 's/  */ /g' | cut -c1-120
echo "== cuda:0 tuner"
timeout 300 $B/spire lenet bench --batch 8192 --device cuda:0 --runs 20 --tune --tuning-cache $OUT/tc_cuda.tsv 2>&1 | tail -1
grep -P "\tconv2d(_grad_input)?\t" $OUT/tc_cuda.tsv | cut -f4-9
