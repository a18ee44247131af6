#!/usr/bin/env bash
# What NVIDIA's Vulkan compiler made of the tensor-core matmul's tilings (registers, spills, as the driver reports
# them through VK_KHR_pipeline_executable_properties: SPIRE_VULKAN_PIPELINE_STATS=1), one process per tiling.
# CONFIGS as for tools/gpu/run-coopmat-configs.sh. Pack spire_bench_matmul as tools/gpu/run-coopmat.sh says.
set -uo pipefail
source tools/gpu/env.sh
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); drv="NVIDIA $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
n=${N:-4096}
for c in ${CONFIGS:-"128,256,16,4,4,2 128,256,16,2,4,2 128,128,32,2,2,2 128,256,16,4,4,3,3"}; do
  IFS=, read tm tn tk wm wn st un <<< "$c"
  cfg="tile_m=$tm,tile_n=$tn,tile_k=$tk,warps_m=$wm,warps_n=$wn,stages=$st${un:+,unroll=$un}"
  f=/tmp/stats_cache.tsv
  printf "# spire tuning cache 1\nvulkan\t$dev\t$drv\tmatmul\tm${n}_k${n}_n${n}_abf16_bbf16\tf32\t$cfg\t1\t1\n" > $f
  echo "== $cfg"
  SPIRE_VULKAN_PIPELINE_STATS=1 timeout 120 $B/spire_bench_matmul --device vulkan:0 --runs 3 --shapes $n --dtype bf16 --tuning-cache $f 2>&1 |
    grep -E "pipeline '|STATS" | sed -e "s/pipeline '[^']*'/pipeline/" | head -3
done
