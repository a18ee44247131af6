#!/usr/bin/env bash
# LeNet's first convolution's forward pass in strips of staged images (conv2d_image_strips_kernel.h) on the H100:
# every strips candidate against float64 on both backends, then each config forced through a one-line tuning cache
# against the heuristic (tools/gpu/run-lenet-conv-configs.sh, LAYER=conv1). Pack spire and spire_tuning_tests.
set -uo pipefail
source tools/gpu/env.sh
$B/spire_tuning_tests --gtest_filter='*image_strips*' 2>&1 | grep -E "OK|FAILED|PASSED" | tail -6
LAYER=conv1 CONFIGS="${CONFIGS:-rows=0,wg=224,c_block=6,pixels=7,images=1 rows=0,wg=112,c_block=6,pixels=7,images=1
  rows=0,wg=448,c_block=6,pixels=7,images=1 rows=0,wg=196,c_block=6,pixels=4,images=1
  rows=0,wg=392,c_block=6,pixels=4,images=1 rows=0,wg=112,c_block=6,pixels=8,images=1
  rows=0,wg=224,c_block=6,pixels=8,images=1 rows=0,wg=392,c_block=6,pixels=2,images=1}" \
  bash tools/gpu/run-lenet-conv-configs.sh
