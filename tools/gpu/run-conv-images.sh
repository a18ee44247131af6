#!/usr/bin/env bash
# Issue 10 on the GPU machine: LeNet's second convolution's forward pass at batch 8192 with whole images staged in
# workgroup memory with every weight (Conv2dConfig::images, conv2d_images_kernel.h) against the row kernel (the
# heuristic), on both backends: a one-line tuning cache per config, fresh processes, `spire lenet bench --profile`
# (the kernel's time, the step's), twice each; then the unprofiled step. Pack spire. CONFIGS: "c_block,wg[,row_loop]"
# each (a candidate: wg one or two images' invocations, (16 / c_block) x 14). OP=conv2d_grad_input: the input gradient
# (its rows: (6 / c_block) x 14 per image).
set -uo pipefail
source tools/gpu/env.sh
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
vdrv="NVIDIA $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
shape=n8192_c6_h14_w14_k16_r5x5_s1x1_p2x2_d1x1_g1
op=${OP:-conv2d}
for dev in cuda:0 vulkan:0; do
  backend=${dev%%:*}; drv="CUDA driver 13.0"; [ $backend = vulkan ] && drv=$vdrv
  for c in row ${CONFIGS:-2,112 2,224 4,56 4,112 8,28 8,56 1,224}; do
    f=/tmp/tc_ci.tsv
    printf "# spire tuning cache 1\n" > $f
    if [ $c != row ]; then
      IFS=, read cob wg rl <<< "$c"
      printf "$backend\t$name\t$drv\t$op\t$shape\tf32\trows=1,wg=$wg,c_block=$cob${rl:+,row_loop=1},images=1\t1\t1\n" >> $f
    fi
    for run in 1 2; do
      r=$($B/spire lenet bench --batch 8192 --device $dev --runs 20 --profile --tuning-cache $f 2>&1 |
          grep -E " ${op}_n8192_c6|^$dev |warning" | awk '{printf "%s %s  ", $2, $NF}')
      s=$($B/spire lenet bench --batch 8192 --device $dev --runs 30 --tuning-cache $f 2>&1 | grep -E "^$dev " | awk '{print $3}')
      echo "$dev $c run $run: step $s | $r"
    done
  done
done
