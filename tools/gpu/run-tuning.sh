#!/usr/bin/env bash
# Issue 9 item 4 on the lent GPU: what autotuning gains over the heuristic configs on cuda:0 and vulkan:0, for
# the LeNet training step (batch 64 and 8192) and resnet18 inference (batch 1 and 64: every layer and the whole
# model), all timed with spire's device timestamps (--bench 30 --profile). About 4 to 6 minutes.
#
# Here first: tools/gpu/prepare.sh (builds .gpu/bin/spire), then carry .gl and .gpu. There: torch and
# torchvision export resnet18 (benchmarks/torch_models.py, as run-models.sh does); nothing is downloaded.
# Results: the summary table on stdout and in $OUT/tuning.txt, each layer's heuristic and tuned time and every
# --tune table in $OUT/tuning_layers.txt, the tuning cache the runs filled in $OUT/tuning_cache.txt.
set -uo pipefail
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T=/tmp/tuning
rm -rf $T && mkdir -p $T
python3 tools/gpu/tuning_inputs.py $T 2>&1 | grep -v Warning
python3 tools/gpu/tuning_table.py $B/spire $T $T/cache.txt $OUT/tuning_layers.txt 2>&1 | tee $OUT/tuning.txt
cp $T/cache.txt $OUT/tuning_cache.txt 2>/dev/null
