#!/usr/bin/env bash
# Issue 10: bf16 matmul on vulkan:0 through workgroup matrices (VK_NV_cooperative_matrix2, the driver staging the
# tiles): what the driver offers and what spire reports, the kernel's tests against float64 on vulkan:0, then bf16
# matmul on vulkan:0 a process per shape (the heuristic, now the workgroup-matrix kernel, and the subgroup kernel of
# VK_KHR_cooperative_matrix forced through a one-line tuning cache), the workgroup kernel's tilings, and PyTorch's
# bf16 (cuBLAS) in the same run.
# Pack first: mkdir -p /tmp/pk/bin && cp build/bin/spire build/bin/spire_bench_matmul
#   build/tests/lowering_heavy/spire_lowering_heavy_tests /tmp/pk/bin/ && strip /tmp/pk/bin/* &&
#   tar cJf .gpu/pack.tar.xz -C /tmp/pk bin; there: tar xJf .gpu/pack.tar.xz -C .gpu; carry .gpu and .gl.
set -uo pipefail
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
drv="NVIDIA $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
echo "== VK_NV_cooperative_matrix2 as the driver reports it (bf16 entries)"
python3 tools/gpu/vulkan_coopmat_query.py 2>&1 | grep -E "==|cooperative_matrix2|flexible.*bf16"
echo "== spire devices"
timeout 60 $B/spire devices 2>&1 | grep -E "vulkan|cuda|features" | head -8
echo "== workgroup-matrix kernel tests (vulkan:0) and the subgroup kernel's (unchanged)"
timeout 400 $B/spire_lowering_heavy_tests --gtest_filter="${TESTS:-*WorkgroupMatrix*:*MatmulMmaOnDevice*vulkan*}" --gtest_brief=1 2>&1 | tail -12
# One tuning-cache line: tiling $2 for the n^3 product (n = $1), B stored [N, K] when $3 is "_bt".
cache() {
  local f=$OUT/cache_$RANDOM$RANDOM.tsv
  printf "# spire tuning cache 1\nvulkan\t$dev\t$drv\tmatmul\tm${1}_k${1}_n${1}${3:-}_abf16_bbf16\tf32\t$2\t1\t1\n" > $f
  echo $f
}
bench() {  # shape [cache] [extra flags]
  timeout 120 $B/spire_bench_matmul --device vulkan:0 --runs 30 --shapes $1 --dtype bf16 ${2:+--tuning-cache $2} ${3:-} 2>&1 |
    grep -E "^vulkan:0 +[0-9]|warning|rror"
}
ms_of() {  # the bench line's time, '!' where the bench fell back to the heuristic
  local line; line=$(cat)
  local ms; ms=$(echo "$line" | grep -oE " [0-9]+\.[0-9]{4} " | head -1 | tr -d ' ')
  echo "$line" | grep -q tuned || ms="$ms!"
  echo "${ms:-fail}"
}
echo "== bf16 on vulkan:0, heuristic configs, a process per shape"
for shape in ${SHAPES:-1024 2048 4096 8192 512x768x3072 512x3072x768}; do bench $shape; done | tee $OUT/heuristic.txt
echo "== bf16 n^3 on vulkan:0 (ms, each a fresh process, each tiling twice): B as stored [K, N], and [N, K] (--b-transposed)"
khr="tile_m=128,tile_n=256,tile_k=16,warps_m=4,warps_n=4,stages=2"
printf "%-34s%22s%22s%22s%22s\n" tiling "4096 [K,N]" "8192 [K,N]" "4096 [N,K]" "8192 [N,K]"
for cfg in ${CONFIGS:-khr 128,256,64,1 128,256,32,1 128,256,16,1 128,256,64,4 128,128,64,1 256,128,64,1 128,128,32,4}; do
  if [ "$cfg" = khr ]; then c=$khr; label="subgroup 128x256x16 w4x4 s2"; else
    IFS=, read tm tn tk u <<< "$cfg"; c="tile_m=$tm,tile_n=$tn,tile_k=$tk,workgroup_matrix=1,unroll=$u"; label="workgroup ${tm}x${tn}x${tk} u$u"; fi
  printf "%-34s" "$label"
  for bt in "" _bt; do
    for n in 4096 8192; do
      t1=$(bench $n $(cache $n $c $bt) ${bt:+--b-transposed} | ms_of)
      t2=$(bench $n $(cache $n $c $bt) ${bt:+--b-transposed} | ms_of)
      printf "%22s" "$t1 $t2"
    done
  done
  echo
done
