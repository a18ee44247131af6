#!/usr/bin/env bash
# The tuner's warm-up on vulkan:0 (2026-11-27): bf16 4096^3 tuned in-process (the table's heuristic time should match
# the heuristic timed alone, 0.62-0.63 ms), then the pick and the heuristic each timed in a fresh process.
# Pack spire_bench_matmul into .gpu/bin; there: tar xJf .gpu/pack.tar.xz -C .gpu; carry .gpu and .gl.
set -uo pipefail
source tools/gpu/env.sh
n=${N:-4096}
rm -f /tmp/tune.tsv
timeout 500 $B/spire_bench_matmul --device vulkan:0 --runs 30 --shapes $n --dtype bf16 --tune --tuning-cache /tmp/tune.tsv 2>&1 |
  grep -vE "^\[|^ *$" | tail -8
echo "== fresh processes: tuned pick, heuristic"
timeout 120 $B/spire_bench_matmul --device vulkan:0 --runs 30 --shapes $n --dtype bf16 --tuning-cache /tmp/tune.tsv 2>&1 | grep -E "^vulkan"
timeout 120 $B/spire_bench_matmul --device vulkan:0 --runs 30 --shapes $n --dtype bf16 --tuning-cache /tmp/none.tsv 2>&1 | grep -E "^vulkan"
