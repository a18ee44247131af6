#!/usr/bin/env bash
# resnet18 at batch 64 tuned first (`spire run --tune`, a fresh tuning cache) on cuda:0 and vulkan:0, next to
# PyTorch's times from the same run (benchmarks/torch_models.py). Tuning every convolution of the model takes
# minutes per device. Carry .gpu (spire, the encoder layers in .gpu/models) and .gl.
set -uo pipefail
source tools/gpu/env.sh
M=/tmp/models
mkdir -p $M && cp .gpu/models/* $M/
python3 benchmarks/torch_models.py $M 2>&1 | grep -v Warning > $OUT/torch_models.txt
grep -E "^torch resnet18 b64 " $OUT/torch_models.txt > /tmp/torch_resnet18_b64.txt
SPIRE_RUN_ARGS="--tune --tuning-cache /tmp/tc.txt" timeout ${TUNE_LIMIT_S:-450} \
  python3 tools/gpu/models_table.py $B/spire $M /tmp/torch_resnet18_b64.txt 2>&1 | tee $OUT/resnet18_tuned.txt
