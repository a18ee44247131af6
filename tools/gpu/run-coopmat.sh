#!/usr/bin/env bash
# Issue 10 item 3 on the GPU machine, tensor cores on vulkan:0 through VK_KHR_cooperative_matrix: what the driver
# offers and what spire reports; the tensor-core kernel's tests on vulkan:0 (validation layer off: Debian's layer
# predates the extension); spire test-ops' f16/bf16 rows on vulkan:0; then bf16 and f16 matmul on vulkan:0 and cuda:0
# next to PyTorch in the same run, and the autotuner's picks on vulkan:0.
# Pack first: mkdir -p /tmp/pk/bin && cp build/bin/spire build/bin/spire_bench_matmul
#   build/tests/lowering_heavy/spire_lowering_heavy_tests build/tests/vulkan/spire_vulkan_tests /tmp/pk/bin/ && strip /tmp/pk/bin/* &&
#   tar cJf .gpu/pack.tar.xz -C /tmp/pk bin; there: tar xJf .gpu/pack.tar.xz -C .gpu; carry .gpu and .gl.
set -uo pipefail
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
echo "== the driver's cooperative-matrix entries (16x16x16 only)"
python3 tools/gpu/vulkan_coopmat_query.py 2>&1 | grep -E "==|16x16x16|cooperative|bfloat16"
echo "== spire devices"
timeout 60 $B/spire devices 2>&1 | head -20
echo "== copies into workgroup memory on vulkan:0 (validation layer on, so cooperative matrices masked: Debian's layer"
echo "   predates VK_KHR_cooperative_matrix and warns about the device that enables it)"
SPIRE_MASK_FEATURES=cooperative-matrix SPIRE_VULKAN_VALIDATION=1 timeout 120 $B/spire_vulkan_tests --gtest_filter='*AsyncCopy*' --gtest_brief=1 2>&1 | tail -4
echo "== tensor-core matmul kernel tests on vulkan:0 and cuda:0"
SPIRE_EXPECT_COOPERATIVE_MATRIX=1 timeout 400 $B/spire_lowering_heavy_tests --gtest_filter='*MatmulMma*' --gtest_brief=1 2>&1 | tail -15
echo "== spire test-ops --device vulkan:0: f16/bf16 rows that did not pass, their count, the summary"
timeout 300 $B/spire test-ops --device vulkan:0 > $OUT/test-ops-vulkan0.txt 2>&1
grep -E "^\S+ +b?f16\[" $OUT/test-ops-vulkan0.txt | grep -v " pass" | head -20
echo "f16/bf16 rows passed: $(grep -E '^\S+ +b?f16\[' $OUT/test-ops-vulkan0.txt | grep -c ' pass')"
tail -1 $OUT/test-ops-vulkan0.txt
# One process per shape on vulkan:0: in one process, a shape timed after others can run several times slower (the
# driver-state effect, docs/PERFORMANCE.md: 4096^3 took 3.1 ms after 1024^3 and 2048^3, 0.73 ms alone).
shapes=${SHAPES:-1024,2048,4096,8192,512x768x3072,512x3072x768}
for dt in bf16 f16; do
  echo "== spire_bench_matmul --dtype $dt on vulkan:0, a process per shape"
  for shape in ${shapes//,/ }; do
    timeout 120 $B/spire_bench_matmul --device vulkan:0 --runs 30 --shapes $shape --dtype $dt 2>&1 | grep -E "^vulkan:0 +[0-9]"
  done | tee $OUT/spire_matmul_vulkan_$dt.txt
done
echo "== bf16 on cuda:0 (same run)"
timeout 300 $B/spire_bench_matmul --device cuda:0 --runs 30 --shapes $shapes --dtype bf16 2>&1 | grep -E "^cuda:0 +[0-9]"
echo "== PyTorch, same GPU"
timeout 300 python3 benchmarks/torch_matmul_conv.py --runs 30 --matmul-only 2>&1 | tee $OUT/torch_matmul.txt | tail -14
if [ "${TUNE:-0}" = 1 ]; then
  echo "== the autotuner on vulkan:0 (bf16)"
  timeout 400 $B/spire_bench_matmul --device vulkan:0 --runs 10 --shapes 4096,8192 --dtype bf16 --tune --tuning-cache $OUT/tuning.json 2>&1 | grep -E "^vulkan:0 |tun"
fi
