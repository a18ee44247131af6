#!/usr/bin/env bash
# LeNet's convolutions at batch 8192 with occupancy requests (Conv2dConfig / GradWeightConfig::per_core: PTX's
# .minnctapersm) against none. LAYER=conv2 (the default): the second convolution's forward and input-gradient row
# kernels (looped window rows); LAYER=conv1: the first convolution's forward (weights in workgroup memory) and its
# staged weight gradient. A two-line tuning cache per value, fresh processes, `spire lenet bench --profile` on cuda:0
# twice each, registers and occupancy from Nsight Compute. Pack spire. VALUES: per_core values (0: none).
set -uo pipefail
source tools/gpu/env.sh
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
if [ "${LAYER:-conv2}" = conv1 ]; then
  shape=n8192_c1_h28_w28_k6_r5x5_s1x1_p2x2_d1x1_g1
  first="conv2d	rows=0,wg=64,c_block=6,shared_w=1,pixels=16"
  second="conv2d_grad_weight	block_rows=5,block_cols=5,wg=64,splits=220,row_mode=1,staged=1"
  kernels="conv2d_n8192_c1_h28|conv2d_grad_weight_n8192_c1_h28"
  values=${VALUES:-0 8 12 16}
else
  shape=n8192_c6_h14_w14_k16_r5x5_s1x1_p2x2_d1x1_g1
  first="conv2d	rows=1,wg=32,c_block=2,row_loop=1"
  second="conv2d_grad_input	rows=1,wg=32,c_block=3,row_loop=1"
  kernels="conv2d_n8192_c6_h14|conv2d_grad_input_n8192_c6_h14"
  values=${VALUES:-0 20 24 32}
fi
for pc in $values; do
  f=/tmp/tc_conv_$pc.tsv
  suffix=""; [ $pc != 0 ] && suffix=",per_core=$pc"
  printf "# spire tuning cache 1\n" > $f
  for line in "$first" "$second"; do
    IFS=$'\t' read key cfg <<< "$line"
    printf "cuda\t$name\tCUDA driver 13.0\t$key\t$shape\tf32\t$cfg$suffix\t1\t1\n" >> $f
  done
  for run in 1 2; do
    r=$($B/spire lenet bench --batch 8192 --device cuda:0 --runs 20 --profile --tuning-cache $f 2>&1 |
        grep -E "$kernels|^cuda:0 |warning" | awk '{printf "%s %s  ", $2, $NF}')
    echo "per_core=$pc run $run: $r"
  done
  timeout 120 /usr/local/cuda/bin/ncu --kernel-name regex:"$kernels" --launch-count 2 --section LaunchStats \
    --section Occupancy $B/spire lenet bench --batch 8192 --device cuda:0 --runs 1 --tuning-cache $f 2>&1 |
    grep -E "Registers Per Thread|Achieved Occupancy" | sed 's/  */ /g' | tr '\n' ' '; echo
done
