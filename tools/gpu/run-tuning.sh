#!/usr/bin/env bash
# What `--tune` gains over the heuristic configs on cuda:0 and vulkan:0, for the LeNet training step (batch 64 and
# 8192) and resnet18 inference (batch 1 and 64: every layer and the whole model), timed with spire's device timestamps
# (--bench 30, and --profile for each launch), the tuned step in a process of its own (tools/gpu/tuning_table.py).
# About 4 to 6 minutes.
# Here: bash tools/gpu/prepare.sh. There, carrying .gpu and .gl: bash tools/gpu/run-tuning.sh. The summary table is
# printed and in $OUT/tuning.txt; each layer's heuristic and tuned time and every --tune table in
# $OUT/tuning_layers.txt; the tuning cache the runs filled in $OUT/tuning_cache.txt.
set -uo pipefail
source tools/gpu/env.sh
T=/tmp/tuning
rm -rf $T && mkdir -p $T
python3 tools/gpu/tuning_table.py $B/spire $T $T/cache.txt $OUT/tuning_layers.txt 2>&1 | grep -v Warning | tee $OUT/tuning.txt
cp $T/cache.txt $OUT/tuning_cache.txt 2>/dev/null
