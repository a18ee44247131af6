#!/usr/bin/env bash
# LeNet's first convolution's weight gradient with every weight in one workgroup and each owner's rows split among
# invocations (GradWeightConfig::row_split, conv2d_grad_weight_images_kernel.h) on the H100: the staged kernels'
# candidates against float64 on both backends, then row_split configs forced through one-line tuning caches against
# the heuristic (tools/gpu/run-lenet-conv-configs.sh), and the second convolution's weight gradient (whose staged rows
# are now padded against bank conflicts) under its heuristic. Pack spire and spire_tuning_tests.
set -uo pipefail
source tools/gpu/env.sh
$B/spire_tuning_tests --gtest_filter='*row_split*:*all_pairs*:*image_strips*' 2>&1 | grep -E "OK|FAILED|PASSED" | tail -8
p="block_rows=5,block_cols=5"
LAYER=conv1 OP=conv2d_grad_weight CONFIGS="${CONFIGS:-$p,wg=224,splits=512,row_mode=1,co_block=2,all_pairs=1,row_split=14
  $p,wg=224,splits=256,row_mode=1,co_block=2,all_pairs=1,row_split=14 $p,wg=448,splits=512,row_mode=1,co_block=2,all_pairs=1,row_split=28
  $p,wg=288,splits=512,row_mode=1,co_block=3,all_pairs=1,row_split=28 $p,wg=160,splits=512,row_mode=1,co_block=3,all_pairs=1,row_split=14
  $p,wg=64,splits=512,row_mode=1,co_block=6,all_pairs=1,row_split=7 $p,wg=224,splits=512,row_mode=1,all_pairs=1,row_split=7}" \
  bash tools/gpu/run-lenet-conv-configs.sh
LAYER=conv1 OP=conv2d CONFIGS="rows=0,wg=392,c_block=6,pixels=2,images=1 rows=0,wg=392,c_block=6,pixels=4,images=1
  rows=0,wg=196,c_block=6,pixels=4,images=1" bash tools/gpu/run-lenet-conv-configs.sh
LAYER=conv2 OP=conv2d_grad_weight CONFIGS= bash tools/gpu/run-lenet-conv-configs.sh
