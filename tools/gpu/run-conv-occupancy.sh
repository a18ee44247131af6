#!/usr/bin/env bash
# Issue 10 on the GPU machine: LeNet's second convolution's forward and input-gradient row kernels (looped window
# rows, 128 registers) with occupancy requests (Conv2dConfig::per_core: PTX's .minnctapersm) against none (the
# heuristic). A two-line tuning cache per value, fresh processes, `spire lenet bench --profile` on cuda:0 twice
# each, registers and occupancy from Nsight Compute. Pack spire. VALUES: per_core values (0: none).
set -uo pipefail
source tools/gpu/env.sh
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
shape=n8192_c6_h14_w14_k16_r5x5_s1x1_p2x2_d1x1_g1
for pc in ${VALUES:-0 20 24 32}; do
  f=/tmp/tc_conv_$pc.tsv
  suffix=""; [ $pc != 0 ] && suffix=",per_core=$pc"
  printf "# spire tuning cache 1\n" > $f
  printf "cuda\t$name\tCUDA driver 13.0\tconv2d\t$shape\tf32\trows=1,wg=32,c_block=2,row_loop=1$suffix\t1\t1\n" >> $f
  printf "cuda\t$name\tCUDA driver 13.0\tconv2d_grad_input\t$shape\tf32\trows=1,wg=32,c_block=3,row_loop=1$suffix\t1\t1\n" >> $f
  for run in 1 2; do
    r=$($B/spire lenet bench --batch 8192 --device cuda:0 --runs 20 --profile --tuning-cache $f 2>&1 |
        grep -E "conv2d_n8192_c6_h14|conv2d_grad_input_n8192_c6_h14|^cuda:0 |warning" | awk '{printf "%s %s  ", $2, $NF}')
    echo "per_core=$pc run $run: $r"
  done
  timeout 120 /usr/local/cuda/bin/ncu --kernel-name regex:"conv2d_n8192_c6_h14|conv2d_grad_input_n8192_c6_h14" --launch-count 2 \
    --section LaunchStats --section Occupancy $B/spire lenet bench --batch 8192 --device cuda:0 --runs 1 --tuning-cache $f 2>&1 |
    grep -E "Registers Per Thread|Achieved Occupancy" | sed 's/  */ /g' | tr '\n' ' '; echo
done
