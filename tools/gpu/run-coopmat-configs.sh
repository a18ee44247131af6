#!/usr/bin/env bash
# The tensor-core matmul's tilings on vulkan:0 (or DEVICE), each timed in a fresh process (vulkan:0's in-process tuning is
# unreliable: docs/PERFORMANCE.md, the driver-state effect): a one-line tuning cache per tiling and shape, then
# spire_bench_matmul with it ("!": the bench fell back to the heuristic). Same pack as tools/gpu/run-coopmat.sh.
# CONFIGS: tile_m,tile_n,tile_k,warps_m,warps_n,stages[,unroll[,producers]] each (unroll 1: rolled). STATS=1 also
# prints each tiling's registers at the last shape (SPIRE_VULKAN_PIPELINE_STATS). BT=1: B given as [N, K]
# (spire_bench_matmul --b-transposed, a Linear layer's weight).
set -uo pipefail
source tools/gpu/env.sh
# DEVICE=cuda:0 times the same tilings through ptxas instead of NVIDIA's Vulkan compiler.
device=${DEVICE:-vulkan:0}; backend=${device%%:*}
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); drv="NVIDIA $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
[ "$backend" = cuda ] && drv="CUDA driver 13.0"
bt=${BT:+--b-transposed}
configs=${CONFIGS:-"128,128,32,2,2,2 128,128,32,2,4,2 128,256,16,2,4,2 256,128,16,4,2,2 128,128,16,2,2,4 128,128,16,2,4,4 64,64,32,2,2,4"}
printf "%-28s" "tiling"; for n in ${SHAPES:-2048 4096 8192}; do printf "%12s" "$n^3 ms"; done; echo
for c in $configs; do
  IFS=, read tm tn tk wm wn st un pr <<< "$c"
  [ "${un:-1}" = 1 ] && un=
  cfg="tile_m=$tm,tile_n=$tn,tile_k=$tk,warps_m=$wm,warps_n=$wn,stages=$st${un:+,unroll=$un}${pr:+,producers=$pr}"
  printf "%-28s" "${tm}x${tn}x${tk} w${wm}x${wn} s${st}${un:+ u$un}${pr:+ p$pr}"
  for n in ${SHAPES:-2048 4096 8192}; do
    f=$OUT/cache_${tm}_${tn}_${tk}_${wm}_${wn}_${st}_${un:-1}_${pr:-0}_$n.tsv
    printf "# spire tuning cache 1\n$backend\t$dev\t$drv\tmatmul\tm${n}_k${n}_n${n}${bt:+_bt}_abf16_bbf16\tf32\t$cfg\t1\t1\n" > $f
    ms=$(timeout 120 $B/spire_bench_matmul --device $device --runs 30 --shapes $n --dtype bf16 $bt --tuning-cache $f 2>&1 | awk '/^'$device' +[0-9]/{print $4 ($8=="tuned" ? "" : "!")}')
    printf "%12s" "${ms:-fail}"
  done
  if [ -n "${STATS:-}" ]; then
    printf "  %s" "$(SPIRE_VULKAN_PIPELINE_STATS=1 timeout 120 $B/spire_bench_matmul --device $device --runs 3 --shapes $n \
      --dtype bf16 $bt --tuning-cache $f 2>&1 | grep -iE "regist|spill|mma" | head -4 | tr '\n' ' ')"
  fi
  echo
done
