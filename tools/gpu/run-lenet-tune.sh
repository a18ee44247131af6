#!/usr/bin/env bash
# What the autotuner finds for LeNet's step at batch 8192 on each backend against the heuristics: `spire lenet bench
# --tune` with an empty tuning cache (its table of heuristic and tuned times per kernel), then the step with the tuned
# cache and with the heuristics, fresh processes (DEVICES: which, both by default). The caches come back under $OUT.
# Pack spire.
set -uo pipefail
source tools/gpu/env.sh
printf "# spire tuning cache 1\n" > /tmp/none.tsv
for dev in ${DEVICES:-cuda:0 vulkan:0}; do
  cache=$OUT/tuned_${dev%%:*}.tsv
  printf "# spire tuning cache 1\n" > $cache
  echo "== $dev: tuning"
  timeout 280 $B/spire lenet bench --batch 8192 --device $dev --runs 10 --tune --tuning-cache $cache 2>&1 | grep -vE "^\s*$" | tail -40
  for run in 1 2; do
    h=$($B/spire lenet bench --batch 8192 --device $dev --runs 30 --tuning-cache /tmp/none.tsv 2>&1 | grep -E "^$dev " | awk '{print $3}')
    t=$($B/spire lenet bench --batch 8192 --device $dev --runs 30 --tuning-cache $cache 2>&1 | grep -E "^$dev " | awk '{print $3}')
    echo "$dev run $run: heuristics $h ms, tuned $t ms"
  done
done
