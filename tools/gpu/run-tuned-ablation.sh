#!/usr/bin/env bash
# Which of the tuner's picks for LeNet's step at batch 8192 pay inside the step: for each line of a tuning cache
# whose config beat the heuristic when timed alone (TUNED_CUDA / TUNED_VULKAN, e.g. the caches run-lenet-tune.sh
# writes under $OUT, carried in .gpu), the step with that line alone against the step with no cache, fresh processes,
# twice each, unprofiled, medians of 30. Pack spire.
set -uo pipefail
source tools/gpu/env.sh
printf "# spire tuning cache 1\n" > /tmp/none.tsv
step() { $B/spire lenet bench --batch 8192 --device $1 --runs 30 --tuning-cache $2 2>&1 | grep -E "^$1 " | awk '{print $3}'; }
for dev in cuda:0 vulkan:0; do
  cache=${TUNED_CUDA:-.gpu/tuned_cuda.tsv}; [ ${dev%%:*} = vulkan ] && cache=${TUNED_VULKAN:-.gpu/tuned_vulkan.tsv}
  echo "== $dev: no cache $(step $dev /tmp/none.tsv) $(step $dev /tmp/none.tsv) ms"
  grep -v "^#" $cache | awk -F'\t' '$8 < $9' | while IFS= read -r line; do
    f=/tmp/one.tsv
    printf "# spire tuning cache 1\n%s\n" "$line" > $f
    echo "$(echo "$line" | awk -F'\t' '{printf "%s %s %s alone %s -> %s ms", $4, $5, $7, $9, $8}'): step $(step $dev $f) $(step $dev $f)"
  done
done
