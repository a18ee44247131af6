#!/usr/bin/env bash
# Issue 10, items 4 and 5, on the GPU machine: the fusion tests (epilogues, the final group) and the whole-graph
# tests on cuda:0 and vulkan:0 with the validation layer on; LeNet's training step at batch 64 and 8192 launch by
# launch next to PyTorch eager and torch.compile; one training epoch on each backend (seconds per epoch).
# Pack first: EXTRA_TARGETS="spire_bench_lenet_step spire_lowering_tests" WITH_DATA=1 bash tools/gpu/prepare.sh, then
# delete the other test binaries from .gpu/bin to stay within the carry limit, and export the encoder layers into
# .gpu/models as tools/gpu/prepare-onnx.sh does (run-models.sh needs them).
set -uo pipefail
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
echo "== lowering tests (fusion, executor, LeNet launches; validation layer on)"
SPIRE_VULKAN_VALIDATION=1 $B/spire_lowering_tests --gtest_brief=1 2>&1 | tail -4
if [ -x $B/spire_lowering_heavy_tests ]; then
  echo "== heavy-op lowering tests incl. the LeNet chain and training step vs float64"
  SPIRE_VULKAN_VALIDATION=1 $B/spire_lowering_heavy_tests --gtest_brief=1 2>&1 | tail -4
fi
for b in 64 8192; do
  $B/spire_bench_lenet_step --device all --batch $b --runs 50 --top 8 2>&1 | tee $OUT/lenet_step_b$b.txt
done
python3 benchmarks/torch_lenet_step.py 64 8192 2>&1 | grep -v Warning | tee $OUT/torch_lenet_step.txt
[ -d .gpu/data ] && for dev in cuda:0 vulkan:0; do
  timeout 120 $B/spire train lenet --device $dev --data .gpu/data --epochs 2 2>&1 | grep -E "^(device|compiled|epoch [0-9]:)" | tee $OUT/train_${dev/:/}.txt
done
bash tools/gpu/run-models.sh 2>&1 | tail -12
echo "== whole models again, tuned first (spire run --tune; rows that finish within the time limit)"
SPIRE_RUN_ARGS="--tune --tuning-cache /tmp/tc.txt" timeout 240 python3 tools/gpu/models_table.py $B/spire /tmp/models $OUT/torch_models.txt 2>&1 | tail -12
