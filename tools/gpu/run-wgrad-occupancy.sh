#!/usr/bin/env bash
# Issue 10 on the GPU machine: LeNet's second convolution's weight gradient (row mode, two output channels per
# workgroup of 32) with an occupancy request (GradWeightConfig::per_core: PTX's .minnctapersm, so ptxas caps the
# registers) against none (the heuristic). A one-line tuning cache per value, fresh processes, `spire lenet bench
# --profile` on cuda:0 (twice each), then registers and occupancy from Nsight Compute; then the heuristic (now
# per_core=16) on both backends. Pack spire. VALUES: the per_core values (0: none), each one of the candidates.
set -uo pipefail
source tools/gpu/env.sh
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
shape=n8192_c6_h14_w14_k16_r5x5_s1x1_p2x2_d1x1_g1
base="block_rows=5,block_cols=5,wg=32,splits=64,row_mode=1,co_block=2"
for pc in ${VALUES:-0 12 16 20 24}; do
  f=/tmp/tc_wgrad_$pc.tsv
  printf "# spire tuning cache 1\n" > $f
  cfg=$base; [ $pc != 0 ] && cfg="$base,per_core=$pc"
  printf "cuda\t$name\tCUDA driver 13.0\tconv2d_grad_weight\t$shape\tf32\t$cfg\t1\t1\n" >> $f
  for run in 1 2; do
    r=$($B/spire lenet bench --batch 8192 --device cuda:0 --runs 20 --profile --tuning-cache $f 2>&1 |
        grep -E "conv2d_grad_weight|^cuda:0 |warning" | awk '{printf "%s %s  ", $2, $NF}')
    echo "per_core=$pc run $run: $r"
  done
done
for pc in ${VALUES:-0 12 16 20 24}; do
  echo "== per_core=$pc: registers and occupancy"
  timeout 120 /usr/local/cuda/bin/ncu --kernel-name regex:"conv2d_grad_weight_n8192_c6" --launch-count 1 --section LaunchStats \
    --section Occupancy --section SpeedOfLight $B/spire lenet bench --batch 8192 --device cuda:0 --runs 1 \
    --tuning-cache /tmp/tc_wgrad_$pc.tsv 2>&1 | grep -E "Registers Per Thread|Achieved Occupancy|^    Duration|Compute \(SM\) Throughput" | sed 's/  */ /g'
done
echo "== the heuristic (empty tuning cache), LeNet b8192 step, both backends, twice each"
printf "# spire tuning cache 1\n" > /tmp/none.tsv
for dev in cuda:0 vulkan:0; do
  for run in 1 2; do
    $B/spire lenet bench --batch 8192 --device $dev --runs 20 --profile --tuning-cache /tmp/none.tsv 2>&1 |
      grep -E "conv2d_grad_weight_n8192_c6|^$dev " | awk '{printf "%s %s  ", $2, $NF}'; echo
  done
done
