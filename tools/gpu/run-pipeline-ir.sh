#!/usr/bin/env bash
# The NVIDIA Vulkan driver's internal representations of the bf16 tensor-core matmul at 8192^3 (the 48 KiB heuristic
# tiling) through SPIRE_VULKAN_PIPELINE_IR, copied to $OUT/pipeline_ir with a listing of what was written, and the
# kernel's time beside them. Pack spire_bench_matmul.
set -uo pipefail
source tools/gpu/env.sh
dir=${OUT:-/tmp}/pipeline_ir
SPIRE_VULKAN_PIPELINE_IR=$dir $B/spire_bench_matmul --device vulkan:0 --dtype bf16 --shapes 8192 --runs 20 2>&1 | grep -vE "^\s*$" | tail -8
ls -la $dir | head -20
