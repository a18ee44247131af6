#!/usr/bin/env bash
# Barriers that order workgroup memory only (backends/spirv/emit_kernel.cpp: UniformMemory only in kernels with a
# readwrite buffer) on the H100's vulkan:0, against the build before ($B/spire-base, $B/spire_bench_matmul-base):
# every op of the harness, LeNet's step at batch 8192 and 64 (fresh processes, interleaved, twice) and this build's
# b8192 profile, bf16 and fp32 matmul 8192³ (fresh processes, three and one times), the memory fences left in the bf16
# kernel's SASS (tools/gpu/vulkan_cache_sass.py, nvdisasm), and the tensor-core tilings through
# tools/gpu/run-coopmat-configs.sh (deeper pipelines: the fence after each barrier waited for the copies in flight).
# Pack spire, spire-base, spire_bench_matmul, spire_bench_matmul-base and zstd.
set -uo pipefail
source tools/gpu/env.sh
export PATH=$PWD/.gpu/bin:$PATH
echo "test-ops vulkan:0: $($B/spire test-ops --device vulkan:0 2>&1 | tail -1)"
for run in 1 2; do for b in 8192 64; do for bin in spire-base spire; do
  echo "run $run b$b vulkan:0 $bin $($B/$bin lenet bench --batch $b --device vulkan:0 --runs 30 2>&1 | grep -E '^vulkan:0 ' | awk '{print $3}')"
done; done; done
echo "== vulkan:0 b8192 profile (ms, kernel), the top 14"
$B/spire lenet bench --batch 8192 --device vulkan:0 --runs 20 --profile 2>&1 | awk 'NF > 3 && $2 ~ /^[0-9.]+$/ {print $2, $NF}' | sort -rn | head -14
for r in 1 2 3; do for bin in spire_bench_matmul-base spire_bench_matmul; do
  echo "bf16 8192 $bin $($B/$bin --device vulkan:0 --runs 20 --shapes 8192 --dtype bf16 2>&1 | grep -E '^vulkan' | awk '{print $4}')"
done; done
for bin in spire_bench_matmul-base spire_bench_matmul; do
  echo "f32 8192 $bin $($B/$bin --device vulkan:0 --runs 10 --shapes 8192 --dtype f32 2>&1 | grep -E '^vulkan' | awk '{print $4}')"
done
for bin in spire_bench_matmul-base spire_bench_matmul; do
  rm -rf /tmp/vc-$bin; SPIRE_CACHE_DIR=/tmp/vc-$bin $B/$bin --device vulkan:0 --runs 2 --shapes 4096 --dtype bf16 > /dev/null 2>&1
  python3 tools/gpu/vulkan_cache_sass.py /tmp/vc-$bin/*.bin /tmp/vc-$bin/code > /dev/null
  for f in /tmp/vc-$bin/code/*.code; do nvdisasm --binary SM90 $f > $f.sass; echo "$bin SASS: $(grep -c '/\*[0-9a-f]*\*/' $f.sass) instructions, $(grep -c MEMBAR $f.sass) MEMBAR, $(grep -c BAR.SYNC $f.sass) BAR.SYNC"; done
done
SHAPES="4096 8192" CONFIGS="${CONFIGS:-128,256,16,4,4,2 128,256,16,4,4,3,3 128,256,16,2,4,2 128,256,16,2,4,3,3 128,128,32,2,2,2 128,128,32,2,2,3,3 128,256,16,2,8,3,3}" bash tools/gpu/run-coopmat-configs.sh
