#!/usr/bin/env bash
# Issue 10 item 3 on the GPU machine: half precision. bf16 conversions bit for bit (the conformance suite), seed
# 001's bf16 SiLU MLP against float64 and refused with bfloat16 masked, every op harness case (the f16/bf16 ones
# included) on cuda:0 and vulkan:0 with the validation layer on; then matmul in bf16 and f16 next to cuBLAS's
# bf16 (tensor cores) and fp32 in the same run.
# Pack first: EXTRA_TARGETS="spire_lowering_tests" bash tools/gpu/prepare.sh; carry .gpu and .gl.
set -uo pipefail
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
export SPIRE_VULKAN_VALIDATION=1
echo "== bf16 conversions on every device"
$B/spire_runtime_conformance_tests --gtest_filter='*HalfConversion*' 2>&1 | grep -E "OK|FAILED|Failure|Skipped|PASSED"
echo "== the CUDA tests (f16 math among them)"
$B/spire_cuda_tests --gtest_brief=1 2>&1 | tail -3
echo "== seed 001's bf16 SiLU MLP on every device"
$B/spire_lowering_tests --gtest_filter='*SiluMlpBf16*:*ComputeInF32*' 2>&1 | grep -E "OK|FAILED|Failure|Skipped|PASSED"
for dev in cuda:0 vulkan:0; do
  echo "== spire test-ops --device $dev: f16/bf16 rows that did not pass, their count, the summary"
  $B/spire test-ops --device $dev > $OUT/test-ops-${dev/:/}.txt 2>&1
  grep -E "^\S+ +b?f16\[" $OUT/test-ops-${dev/:/}.txt | grep -v " pass" | head -20
  echo "f16/bf16 rows passed: $(grep -E '^\S+ +b?f16\[' $OUT/test-ops-${dev/:/}.txt | grep -c ' pass')"
  tail -1 $OUT/test-ops-${dev/:/}.txt
done
echo "== seed 001's bf16 MLP forward, launch by launch"
python3 - <<'PY'
import sys
sys.path.insert(0, "tools/gpu")
import numpy as np
from safetensors_io import write_safetensors, Bf16Bits
rng = np.random.default_rng(0)
def bf16(shape, scale=1.0):
    a = (rng.uniform(-1, 1, shape) * scale).astype(np.float32)
    return Bf16Bits((a.view(np.uint32) >> 16).astype(np.uint16))
write_safetensors("/tmp/mlp_in.safetensors", {"x": bf16((8, 128), 2), "linear1.weight": bf16((64, 128)),
    "linear1.bias": bf16((64,)), "linear2.weight": bf16((128, 64)), "linear2.bias": bf16((128,))})
PY
for dev in cuda:0 vulkan:0; do
  $B/spire graph eval examples/models/silu_mlp_bf16.graph --inputs /tmp/mlp_in.safetensors --outputs /tmp/mlp_out.safetensors \
    --device $dev --profile 2>&1 | tail -12
done
unset SPIRE_VULKAN_VALIDATION
shapes=1024,4096,8192,512x768x3072,512x3072x768
for dt in bf16 f16 f32; do
  echo "== spire_bench_matmul --dtype $dt"
  $B/spire_bench_matmul --device all --runs 30 --shapes $shapes --dtype $dt 2>&1 | tee $OUT/spire_matmul_$dt.txt
done
echo "== PyTorch, same GPU"
python3 benchmarks/torch_matmul_conv.py --runs 30 --matmul-only 2>&1 | tee $OUT/torch_matmul.txt
