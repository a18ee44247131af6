#!/usr/bin/env bash
# LeNet trained at batch 8192 (5 epochs, lr 0.1) with one layer's previous kernels forced through a tuning cache
# ("before"; BEFORE=conv1, or conv2 by default, tools/gpu/lenet_before_cache.sh) and with the heuristics ("after": the
# staged kernels of docs/PERFORMANCE.md), on both backends: the same seeds, so the losses and accuracies should agree
# to rounding. Needs .gpu/data (Debian's dataset-fashion-mnist files). Pack spire.
set -uo pipefail
source tools/gpu/env.sh
source tools/gpu/lenet_before_cache.sh
for dev in cuda:0 vulkan:0; do
  for which in before none; do
    echo "== $dev, $which:"
    timeout 200 $B/spire train lenet --device $dev --data .gpu/data --epochs 5 --batch 8192 --lr 0.1 \
      --tuning-cache /tmp/$which.tsv 2>&1 | grep -E "^epoch [0-9]:|warning"
  done
done
