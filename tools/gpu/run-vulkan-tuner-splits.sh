#!/usr/bin/env bash
# Why --tune on vulkan:0 times the strided input gradients' split programs 3-10x slower than `spire graph eval
# --profile` runs them (2026-11-27, twelfth session): the tuner over layer4.0.conv1's and layer2.0.conv1's input
# gradient at batch 1 on vulkan:0 with every candidate's time and timed-run count (SPIRE_TUNING_LOG), the SM clock
# sampled every 20 ms beside it. Here: TESTS=1 bash tools/gpu/prepare-goals.sh; there, carrying .gpu and .gl:
# bash tools/gpu/run-vulkan-tuner-splits.sh
set -uo pipefail
source tools/gpu/env.sh
[ -f .gpu/pack.tar.xz ] && tar xJf .gpu/pack.tar.xz -C .gpu
R=/tmp/vk_tuner
mkdir -p $R
nvidia-smi --query-gpu=timestamp,clocks.sm,utilization.gpu --format=csv,noheader -lms 20 > $R/clocks.csv &
smi=$!
for l in ${LAYERS:-layer4.0.conv1 layer2.0.conv1}; do
  date +%T.%N > $R/start_$l.txt
  SPIRE_TUNING_LOG=$R/candidates.tsv $B/spire_bench_conv2d --device ${DEVICE:-vulkan:0} --runs 30 --passes dgrad --batches 1 \
    --layers $l --tune --tuning-cache /tmp/vk_tc_$l.txt 2>&1 | grep -E "^(vulkan|cuda)"
done
kill $smi
awk -F'\t' '{printf "%-12s %-48s %-60s %10s %s\n", $1, $3, $5, $6, $7}' $R/candidates.tsv | grep -E "splits|32x32|16x16" | cut -c1-150
echo "SM clock samples (MHz): count by band"
awk -F', ' '{split($2,a," "); c=a[1]; b=(c<800)?"<800":(c<1500)?"800-1500":">=1500"; n[b]++} END {for (k in n) print k, n[k]}' $R/clocks.csv
tar czf $OUT/vk_tuner.tar.gz -C /tmp vk_tuner
