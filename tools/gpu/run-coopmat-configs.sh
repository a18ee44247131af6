#!/usr/bin/env bash
# The tensor-core matmul's tilings on vulkan:0, each timed in a fresh process (vulkan:0's in-process tuning is
# unreliable: docs/PERFORMANCE.md, the driver-state effect): a one-line tuning cache per tiling and shape, then
# spire_bench_matmul with it ("!": the bench fell back to the heuristic). Same pack as tools/gpu/run-coopmat.sh.
set -uo pipefail
source tools/gpu/env.sh
dev="NVIDIA H100 80GB HBM3"; drv="NVIDIA 580.159.04"
configs=${CONFIGS:-"128,128,32,2,2,2 128,128,32,2,4,2 128,256,16,2,4,2 256,128,16,4,2,2 128,128,16,2,2,4 128,128,16,2,4,4 64,64,32,2,2,4"}
printf "%-28s" "tiling"; for n in ${SHAPES:-2048 4096 8192}; do printf "%12s" "$n^3 ms"; done; echo
for c in $configs; do
  IFS=, read tm tn tk wm wn st <<< "$c"
  cfg="tile_m=$tm,tile_n=$tn,tile_k=$tk,warps_m=$wm,warps_n=$wn,stages=$st"
  printf "%-28s" "${tm}x${tn}x${tk} w${wm}x${wn} s${st}"
  for n in ${SHAPES:-2048 4096 8192}; do
    f=$OUT/cache_${tm}_${tn}_${tk}_${wm}_${wn}_${st}_$n.tsv
    printf "# spire tuning cache 1\nvulkan\t$dev\t$drv\tmatmul\tm${n}_k${n}_n${n}_abf16_bbf16\tf32\t$cfg\t1\t1\n" > $f
    ms=$(timeout 120 $B/spire_bench_matmul --device vulkan:0 --runs 30 --shapes $n --dtype bf16 --tuning-cache $f 2>&1 | awk '/^vulkan:0 +[0-9]/{print $4 ($8=="tuned" ? "" : "!")}')
    printf "%12s" "${ms:-fail}"
  done
  echo
done
