#!/usr/bin/env bash
# Where vulkan:0's tensor-core matmul spends its time: the heuristic kernel at bf16 8192^3, then the same kernel with
# one part of its K loop taken out (SPIRE_MMA_ABLATE, read by a build with
# docs/performance/vulkan_mma_experiments_2026-11-27.patch applied: nobarrier, nocopy, noldsm, halfmma; the results
# are wrong on purpose, only the times count), each in two fresh processes; the kernel's SASS (the
# driver's pipeline cache through tools/gpu/vulkan_cache_sass.py and nvdisasm) and its registers.
# Pack spire_bench_matmul and /usr/bin/zstd into .gpu/bin; there: tar xJf .gpu/pack.tar.xz -C .gpu; carry .gpu, .gl.
set -uo pipefail
source tools/gpu/env.sh
export PATH=$PWD/.gpu/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
n=${N:-8192}
for abl in ${ABLATIONS:-none nobarrier nocopy noldsm halfmma nobarrier,nocopy}; do
  printf "%-22s" "$abl"
  for rep in 1 2; do
    ms=$(SPIRE_MMA_ABLATE=$abl timeout 120 $B/spire_bench_matmul --device vulkan:0 --runs 30 --shapes $n --dtype bf16 2>&1 | awk '/^vulkan:0 +[0-9]/{print $4}')
    printf "%10s" "${ms:-fail}"
  done
  echo
done
echo "== registers"
SPIRE_VULKAN_PIPELINE_STATS=1 timeout 120 $B/spire_bench_matmul --device vulkan:0 --runs 3 --shapes $n --dtype bf16 2>&1 | grep -iE "register|spill|stats" | head -8
echo "== SASS"
rm -rf /tmp/sc /tmp/sass; mkdir -p /tmp/sc
SPIRE_CACHE_DIR=/tmp/sc timeout 120 $B/spire_bench_matmul --device vulkan:0 --runs 3 --shapes $n --dtype bf16 > /dev/null 2>&1
python3 tools/gpu/vulkan_cache_sass.py /tmp/sc/*.bin /tmp/sass | head
for f in /tmp/sass/*mma*.code; do
  nvdisasm --binary SM90 "$f" > $OUT/$(basename "$f" .code).sass 2>&1
  grep -oE "^ +/\*[0-9a-f]+\*/ +[A-Z][A-Z0-9.]*" $OUT/$(basename "$f" .code).sass | awk '{print $2}' | sed 's/\..*//' | sort | uniq -c | sort -rn | head -25
done
echo "== PyTorch bf16"
timeout 300 python3 benchmarks/torch_matmul_conv.py --runs 30 --matmul-only 2>&1 | grep -iE "bf16|dtype|M x" | head -8
