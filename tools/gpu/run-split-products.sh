#!/usr/bin/env bash
# LeNet's three weight-gradient products at batch 8192 (split-K, A read transposed) under given split counts, forced
# through a one-line tuning cache each, on both backends: the product's launch and its partial sums' launch, and the
# unprofiled step, fresh processes. PRODUCTS: "shape=config ..." (default: the first layer's 8 and 16 splits, the second's
# 32 and 64, the third's 32 and 64). Pack spire.
set -uo pipefail
source tools/gpu/env.sh
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
vdrv="NVIDIA $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
products=${PRODUCTS:-"m120_k8192_n784_at=tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=8
m120_k8192_n784_at=tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=16
m84_k8192_n120_at=tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=32
m84_k8192_n120_at=tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=64
m10_k8192_n84_at=tile_m=16,tile_n=16,tile_k=16,reg_m=1,reg_n=1,splits=32
m10_k8192_n84_at=tile_m=16,tile_n=16,tile_k=16,reg_m=1,reg_n=1,splits=64"}
for dev in cuda:0 vulkan:0; do
  backend=${dev%%:*}; drv="CUDA driver 13.0"; [ $backend = vulkan ] && drv=$vdrv
  for p in $products; do
    shape=${p%%=*}; config=${p#*=}
    f=/tmp/tc_split.tsv
    printf "# spire tuning cache 1\n$backend\t$name\t$drv\tmatmul\t$shape\tf32\t$config\t1\t1\n" > $f
    for run in 1 2; do
      r=$($B/spire lenet bench --batch 8192 --device $dev --runs 20 --profile --tuning-cache $f 2>&1 |
          grep -E "matmul(_sum)?_${shape}_|warning" | awk '{printf "%s %s  ", $2, $NF}')
      s=$($B/spire lenet bench --batch 8192 --device $dev --runs 30 --tuning-cache $f 2>&1 | grep -E "^$dev " | awk '{print $3}')
      echo "$dev $shape ${config##*,} run $run: step $s | $r"
    done
  done
done
