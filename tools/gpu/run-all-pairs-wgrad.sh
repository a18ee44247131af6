#!/usr/bin/env bash
# Issue 10 on the GPU machine: LeNet's second convolution's weight gradient at batch 8192 with every weight in one
# workgroup (GradWeightConfig::all_pairs, conv2d_grad_weight_images_kernel.h) against the row kernel (the heuristic),
# on both backends: a one-line tuning cache per config, fresh processes, `spire lenet bench --profile` (the kernel's
# and its partial sums' times, the step's), twice each; then the unprofiled step. Pack spire. CONFIGS: the
# all_pairs configs as "co_block,wg,splits" (each one of the candidates).
set -uo pipefail
source tools/gpu/env.sh
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
vdrv="NVIDIA $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
shape=n8192_c6_h14_w14_k16_r5x5_s1x1_p2x2_d1x1_g1
for dev in cuda:0 vulkan:0; do
  backend=${dev%%:*}; drv="CUDA driver 13.0"; [ $backend = vulkan ] && drv=$vdrv
  for c in row ${CONFIGS:-4,128,512 4,128,256 2,256,512 8,64,512 1,512,512}; do
    f=/tmp/tc_ap.tsv
    printf "# spire tuning cache 1\n" > $f
    if [ $c != row ]; then
      IFS=, read cob wg sp <<< "$c"
      printf "$backend\t$name\t$drv\tconv2d_grad_weight\t$shape\tf32\tblock_rows=5,block_cols=5,wg=$wg,splits=$sp,row_mode=1,co_block=$cob,all_pairs=1\t1\t1\n" >> $f
    fi
    for run in 1 2; do
      r=$($B/spire lenet bench --batch 8192 --device $dev --runs 20 --profile --tuning-cache $f 2>&1 |
          grep -E "conv2d_grad_weight.*n8192_c6|^$dev |warning" | awk '{printf "%s %s  ", $2, $NF}')
      s=$($B/spire lenet bench --batch 8192 --device $dev --runs 30 --tuning-cache $f 2>&1 | grep -E "^$dev " | awk '{print $3}')
      echo "$dev $c run $run: step $s | $r"
    done
  done
done
