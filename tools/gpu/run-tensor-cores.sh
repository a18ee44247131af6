#!/usr/bin/env bash
# Issue 10 item 3 on the GPU machine: bf16/f16 matmul on tensor cores (wmma through kir's cooperative matrices,
# operands fed by cp.async pipelines). Correctness first: the tensor-core kernel's own tests on cuda:0 (every
# tiling, pipeline depth and staging path, edges, transposed and batched operands), the f16/bf16 op harness rows
# and seed 001's bf16 MLP; then matmul in bf16 and f16 (and f32, and bf16 on vulkan:0, which has no tensor-core
# path yet) next to cuBLAS in the same run, the SIMT kernel forced (SPIRE_MASK_FEATURES=cooperative-matrix) for the
# before/after, and the autotuner over the tensor-core tilings.
# Pack first: EXTRA_TARGETS="spire_lowering_tests spire_lowering_heavy_tests spire_bench_lenet_step" bash tools/gpu/prepare.sh;
# carry .gpu, .gl (delete the binaries it does not run from .gpu/bin to stay within the carry limit).
set -uo pipefail
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
echo "== tensor-core matmul kernel tests on cuda:0 (and the refusal on vulkan:0)"
SPIRE_EXPECT_COOPERATIVE_MATRIX=1 $B/spire_lowering_heavy_tests --gtest_filter='*Mma*' --gtest_brief=1 2>&1 | tail -4
echo "== seed 001's bf16 SiLU MLP"
$B/spire_lowering_tests --gtest_filter='*SiluMlpBf16*' 2>&1 | grep -E "OK|FAILED|Failure|Skipped|PASSED"
echo "== spire test-ops --device cuda:0: f16/bf16 rows that did not pass, their count, the summary"
$B/spire test-ops --device cuda:0 > $OUT/test-ops-cuda0.txt 2>&1
grep -E "^\S+ +b?f16\[" $OUT/test-ops-cuda0.txt | grep -v " pass" | head -20
echo "f16/bf16 rows passed: $(grep -E '^\S+ +b?f16\[' $OUT/test-ops-cuda0.txt | grep -c ' pass')"
tail -1 $OUT/test-ops-cuda0.txt
shapes=1024,2048,4096,8192,512x768x3072,512x3072x768
for dt in bf16 f16; do
  echo "== spire_bench_matmul --dtype $dt (tensor cores on cuda:0)"
  $B/spire_bench_matmul --device cuda:0 --runs 30 --shapes $shapes --dtype $dt 2>&1 | tee $OUT/spire_matmul_$dt.txt | tail -7
done
echo "== bf16 on vulkan:0 (no cooperative matrices there yet) and f32 on both"
$B/spire_bench_matmul --device vulkan:0 --runs 10 --shapes 4096,8192 --dtype bf16 2>&1 | tail -2
$B/spire_bench_matmul --device all --runs 10 --shapes 4096,8192 --dtype f32 2>&1 | grep -E "^(cuda|vulkan):0 "
echo "== bf16 with cooperative-matrix masked (the SIMT kernel), 4096 and 8192"
SPIRE_MASK_FEATURES=cooperative-matrix $B/spire_bench_matmul --device cuda:0 --runs 10 --shapes 4096,8192 --dtype bf16 2>&1 | tail -2
echo "== PyTorch, same GPU"
python3 benchmarks/torch_matmul_conv.py --runs 30 --matmul-only 2>&1 | tee $OUT/torch_matmul.txt | tail -14
echo "== the autotuner over the tensor-core tilings"
$B/spire_bench_matmul --device cuda:0 --runs 10 --shapes 2048,4096,8192,512x3072x768 --dtype bf16 --tune --tuning-cache $OUT/tuning.json 2>&1 | grep -E "^cuda:0 "
echo "== the mma.sync ceiling (register fragments only, no memory)"
nvcc -O3 -arch=sm_90 -o /tmp/mma_ceiling tools/gpu/mma_sync_ceiling.cu && /tmp/mma_ceiling
echo "== fp32 matmul 8192 tuned and LeNet's step at batch 8192"
$B/spire_bench_matmul --device all --runs 10 --shapes 8192 --dtype f32 --tune --tuning-cache $OUT/tuning_f32.json 2>&1 | grep -E "^(cuda|vulkan):0 "
[ -x $B/spire_bench_lenet_step ] && $B/spire_bench_lenet_step --device all --batch 8192 --runs 30 --top 4 2>&1 | tail -16
