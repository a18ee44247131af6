#!/usr/bin/env bash
# What the tuner picks for resnet18's strided forward convolutions at batch 1 (2026-11-27, eleventh session): the
# heuristic's row kernel leaves them at 14-45% of PyTorch's speed. Both backends; prints each layer's heuristic and best
# config with their times. Here: TESTS=1 bash tools/gpu/prepare-goals.sh; there, carrying .gpu and .gl: bash
# tools/gpu/run-strided-b1-tune.sh
set -uo pipefail
source tools/gpu/env.sh
[ -f .gpu/pack.tar.xz ] && tar xJf .gpu/pack.tar.xz -C .gpu
layers=${LAYERS:-layer2.0.conv1,layer3.0.conv1,layer4.0.conv1,layer2.0.downsample,layer3.0.downsample,layer4.0.downsample}
timeout 500 $B/spire_bench_conv2d --device all --runs 30 --passes ${PASSES:-fwd} --batches 1 --layers $layers --tune \
  --tuning-cache /tmp/strided_tc.txt 2>&1 | grep -v "^tuning"
cp /tmp/strided_tc.txt $OUT/ 2>/dev/null || true
