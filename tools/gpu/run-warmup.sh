#!/usr/bin/env bash
# The benchmarks' warm-up against the "slow device state" (docs/PERFORMANCE.md, 2026-11-27): vulkan:0's bf16 8192^3
# product in fresh processes, alternately with 3 warm-up runs alone (--warmup-ms 0, as before) and with the default
# half second of them, median of 30 timed runs each. Pack spire_bench_matmul into .gpu/bin; there:
# tar xJf .gpu/pack.tar.xz -C .gpu; carry .gpu and .gl.
set -uo pipefail
source tools/gpu/env.sh
for rep in $(seq 1 ${REPS:-12}); do
  for w in 0 500; do
    ms=$(timeout 120 $B/spire_bench_matmul --device ${DEVICE:-vulkan:0} --runs 30 --warmup-ms $w --shapes ${N:-8192} --dtype bf16 2>&1 |
         awk '/^(vulkan|cuda):0 +[0-9]/{print $4}')
    printf "warm-up %3s ms: %-10s" $w "${ms:-fail}"
  done
  echo
done
