#!/usr/bin/env bash
# LeNet's first convolution at batch 8192: its forward (weights in workgroup memory, 16 elements of 6 channels per
# invocation) and its weight gradient (staged rows) with occupancy requests (per_core) against none, forced through a
# tuning cache, fresh processes, twice each, profiled on cuda:0; registers and occupancy from Nsight Compute. Pack spire.
set -uo pipefail
source tools/gpu/env.sh
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
shape=n8192_c1_h28_w28_k6_r5x5_s1x1_p2x2_d1x1_g1
for pc in ${VALUES:-0 8 12 16}; do
  f=/tmp/tc_conv1_$pc.tsv
  suffix=""; [ $pc != 0 ] && suffix=",per_core=$pc"
  printf "# spire tuning cache 1\n" > $f
  printf "cuda\t$name\tCUDA driver 13.0\tconv2d\t$shape\tf32\trows=0,wg=64,c_block=6,shared_w=1,pixels=16$suffix\t1\t1\n" >> $f
  printf "cuda\t$name\tCUDA driver 13.0\tconv2d_grad_weight\t$shape\tf32\tblock_rows=5,block_cols=5,wg=64,splits=220,row_mode=1,staged=1$suffix\t1\t1\n" >> $f
  for run in 1 2; do
    r=$($B/spire lenet bench --batch 8192 --device cuda:0 --runs 20 --profile --tuning-cache $f 2>&1 |
        grep -E "conv2d_n8192_c1_h28|conv2d_grad_weight_n8192_c1_h28|^cuda:0 |warning" | awk '{printf "%s %s  ", $2, $NF}')
    echo "per_core=$pc run $run: $r"
  done
  timeout 120 /usr/local/cuda/bin/ncu --kernel-name regex:"conv2d_n8192_c1_h28|conv2d_grad_weight_n8192_c1_h28" --launch-count 2 \
    --section LaunchStats --section Occupancy $B/spire lenet bench --batch 8192 --device cuda:0 --runs 1 --tuning-cache $f 2>&1 |
    grep -E "Registers Per Thread|Achieved Occupancy" | sed 's/  */ /g' | tr '\n' ' '; echo
done
