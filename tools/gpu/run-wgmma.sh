#!/usr/bin/env bash
# Issue 10 item 3 on the GPU machine, Hopper's warpgroup MMA fed by tensor copies: the plain-CUDA recipe
# (tools/gpu/tma_gemm_probe.cu, its descriptor check and speed); the wgmma kernel's tests on cuda:0 (tilings, stages,
# edges, transposed, batched and broadcast operands, f16 and bf16) beside the wmma kernel's; the op harness's f16/bf16
# rows and seed 001's bf16 MLP (the lowering picks the wgmma kernel for 16-bit matmuls on cuda:0); then bf16 and f16
# matmul next to PyTorch in the same run, the wmma kernel forced (SPIRE_MASK_FEATURES=tensor-copy) for the
# before/after, and the autotuner over both kernels' tilings.
# Pack first: mkdir -p .gpu/bin && cp build/bin/spire build/bin/spire_bench_matmul
#   build/tests/lowering_heavy/spire_lowering_heavy_tests build/tests/lowering/spire_lowering_tests .gpu/bin/ &&
#   strip .gpu/bin/*; nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o .gpu/bin/tma_gemm
#   tools/gpu/tma_gemm_probe.cu -L/usr/local/cuda/lib64/stubs -lcuda; carry .gpu, .gl.
set -uo pipefail
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
echo "== the recipe in plain CUDA"
$B/tma_gemm 2>&1 | tail -8
echo "== tensor-core matmul kernel tests on cuda:0 (wgmma and wmma; the refusals on vulkan:0)"
SPIRE_EXPECT_COOPERATIVE_MATRIX=1 timeout 300 $B/spire_lowering_heavy_tests --gtest_filter='*Mma*' --gtest_brief=1 2>&1 | tail -12
echo "== seed 001's bf16 SiLU MLP"
timeout 120 $B/spire_lowering_tests --gtest_filter='*SiluMlpBf16*' 2>&1 | grep -E "OK|FAILED|Failure|Skipped|PASSED"
echo "== spire test-ops --device cuda:0: f16/bf16 rows that did not pass, their count, the summary"
timeout 300 $B/spire test-ops --device cuda:0 > $OUT/test-ops-cuda0.txt 2>&1
grep -E "^\S+ +b?f16\[" $OUT/test-ops-cuda0.txt | grep -v " pass" | head -20
echo "f16/bf16 rows passed: $(grep -E '^\S+ +b?f16\[' $OUT/test-ops-cuda0.txt | grep -c ' pass')"
tail -1 $OUT/test-ops-cuda0.txt
shapes=1024,2048,4096,8192,512x768x3072,512x3072x768
for dt in bf16 f16; do
  echo "== spire_bench_matmul --dtype $dt (warpgroup MMA with tensor copies on cuda:0)"
  timeout 300 $B/spire_bench_matmul --device cuda:0 --runs 30 --shapes $shapes --dtype $dt 2>&1 | tee $OUT/spire_matmul_$dt.txt | tail -7
done
echo "== bf16 with tensor-copy masked (the wmma kernel)"
SPIRE_MASK_FEATURES=tensor-copy timeout 300 $B/spire_bench_matmul --device cuda:0 --runs 30 --shapes $shapes --dtype bf16 2>&1 | tail -6
echo "== PyTorch, same GPU"
timeout 300 python3 benchmarks/torch_matmul_conv.py --runs 30 --matmul-only 2>&1 | tee $OUT/torch_matmul.txt | tail -14
echo "== the autotuner over both tensor-core kernels' tilings"
timeout 400 $B/spire_bench_matmul --device cuda:0 --runs 10 --shapes 2048,4096,8192,512x3072x768 --dtype bf16 --tune --tuning-cache $OUT/tuning.json 2>&1 | grep -E "^cuda:0 "
