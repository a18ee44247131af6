#!/usr/bin/env bash
# Whole models on the lent GPU (after tools/gpu/prepare-onnx.sh; carry .gl .gpu/bin): resnet18 and the
# transformer encoder layer (opsets 13 and 17) exported there by benchmarks/torch_models.py with a dynamic batch,
# timed at batch 1 and 64 on cuda:0 and vulkan:0 (spire run --bench, device timestamps) next to PyTorch eager and
# torch.compile, with each output checked against PyTorch's and ONNX Runtime's (CPU).
set -uo pipefail
source tools/gpu/env.sh
M=/tmp/models
mkdir -p $M && cp .gpu/models/* $M/   # the encoder layers, exported here by Debian's torch 1.13 (prepare-onnx.sh)
python3 benchmarks/torch_models.py $M 2>&1 | grep -v Warning | tee $OUT/torch_models.txt
python3 tools/gpu/models_table.py $B/spire $M $OUT/torch_models.txt 2>&1 | tee $OUT/models_table.txt
