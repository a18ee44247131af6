#!/usr/bin/env bash
# LeNet's training step at batch 8192 with the heuristic configs (an empty tuning cache), profiled on both backends:
# every launch's time, longest first (the top 14), and the step. Pack spire.
set -uo pipefail
source tools/gpu/env.sh
printf "# spire tuning cache 1\n" > /tmp/none.tsv
for dev in ${DEVICES:-cuda:0 vulkan:0}; do
  echo "== $dev"
  $B/spire lenet bench --batch 8192 --device $dev --runs 20 --profile --tuning-cache /tmp/none.tsv > /tmp/profile.txt 2>&1
  awk '$2 ~ /^[0-9.]+$/ && NF >= 3' /tmp/profile.txt | sort -k2 -g -r | head -16 | cut -c1-170
  grep -E "^$dev " /tmp/profile.txt
done
