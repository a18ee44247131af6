#!/usr/bin/env bash
# Everything the three issues ask of the GPU machine, in one call (about two minutes):
# devices, examples on both backends, runtime suites, op harness, benchmarks next to PyTorch, the PyTorch
# float64 reference for the evaluator, LeNet training on both backends, cross-device evaluation and logits.
set -uo pipefail
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
$B/spire devices
$B/spire examples --device all 2>&1 | tee $OUT/examples.txt
echo "== examples tests (validation layer on)"; SPIRE_VULKAN_VALIDATION=1 $B/spire_examples_tests --gtest_brief=1 2>&1 | tail -3
echo "== runtime conformance on every device (validation layer on)"
SPIRE_VULKAN_VALIDATION=1 $B/spire_runtime_conformance_tests --gtest_brief=1 2>&1 | tail -3
echo "== CUDA tests"; $B/spire_cuda_tests --gtest_brief=1 2>&1 | tail -3
echo "== test-ops"; $B/spire test-ops --device all > $OUT/test_ops.txt 2>&1; echo "exit $?"; tail -1 $OUT/test_ops.txt
$B/spire_bench_foundation --device all --mib 256 --runs 50 2>&1 | tee $OUT/bench.txt
python3 benchmarks/torch_foundation.py 256 2>&1 | tee -a $OUT/bench.txt
$B/spire_bench_lenet_step --device all --runs 20 --top 6 2>&1 | tee $OUT/lenet_step.txt
bash tools/gpu/run-issue3-reference.sh 2>&1 | tail -3
bash tools/gpu/run-training.sh 2>&1 | grep -v "^$"
for w in cuda0 vulkan0; do for dev in cuda:0 vulkan:0; do
  echo -n "weights from $w on $dev: "; $B/spire eval lenet --device $dev --data .gpu/data --load $OUT/w_$w.safetensors 2>&1 | tail -1
done; done
