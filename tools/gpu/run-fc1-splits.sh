#!/usr/bin/env bash
# LeNet's first fully connected layer's weight gradient at batch 8192 (matmul 120 x 8192 x 784, A read transposed:
# split-K, 26 blocks of 64x64) with 5 (the heuristic), 8 and 16 splits, forced through a one-line tuning cache,
# fresh processes, twice each, profiled on both backends. Pack spire.
set -uo pipefail
source tools/gpu/env.sh
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
drv="NVIDIA $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
for dev in cuda:0 vulkan:0; do
  if [ $dev = cuda:0 ]; then id="cuda	$name	CUDA driver 13.0"; else id="vulkan	$name	$drv"; fi
  for sp in ${SPLITS:-5 8 16}; do
    f=/tmp/tc_fc1_$sp.tsv
    printf "# spire tuning cache 1\n$id\tmatmul\tm120_k8192_n784_at\tf32\ttile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=$sp\t1\t1\n" > $f
    for run in 1 2; do
      r=$($B/spire lenet bench --batch 8192 --device $dev --runs 20 --profile --tuning-cache $f 2>&1 |
          grep -E "matmul_m120_k8192|matmul_sum_m120|^$dev |warning" | awk '{printf "%s %s  ", $2, $NF}')
      echo "$dev splits=$sp run $run: $r"
    done
  done
done
