#!/usr/bin/env bash
# LeNet's second convolution's weight gradient with each owner's rows split among invocations
# (GradWeightConfig::row_split) on the H100: the staged kernels' candidates against float64 on both backends, then
# configs forced through one-line tuning caches against the heuristics (tools/gpu/run-lenet-conv-configs.sh). Pack
# spire and spire_tuning_tests.
set -uo pipefail
source tools/gpu/env.sh
$B/spire_tuning_tests --gtest_filter='*all_pairs*:*row_split*' 2>&1 | grep -E "FAILED|PASSED" | tail -4
p="block_rows=5,block_cols=5"
OP=conv2d_grad_weight CONFIGS="${GRAD_WEIGHT:-$p,wg=128,splits=512,row_mode=1,co_block=4,all_pairs=1
  $p,wg=256,splits=512,row_mode=1,co_block=4,all_pairs=1,row_split=2
  $p,wg=256,splits=512,row_mode=1,co_block=8,all_pairs=1,row_split=4}" bash tools/gpu/run-lenet-conv-configs.sh
