#!/usr/bin/env bash
# LeNet's step at batch 8192 with single kernels' configs forced through a one-line tuning cache each (CONFIGS:
# "template/shape=config" per line; DEVICES, default cuda:0), then all of them together: the forced kernel's launch
# from the profile and the unprofiled step, fresh processes, twice; the heuristics' step first. Pack spire.
set -uo pipefail
source tools/gpu/env.sh
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
vdrv="NVIDIA $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
line() {  # backend, template/shape=config
  local spec=$2 drv="CUDA driver 13.0"
  [ $1 = vulkan ] && drv=$vdrv
  local template=${spec%%/*} rest=${spec#*/}
  printf "$1\t$name\t$drv\t$template\t${rest%%=*}\tf32\t${rest#*=}\t1\t1\n"
}
for dev in ${DEVICES:-cuda:0}; do
  backend=${dev%%:*}
  printf "# spire tuning cache 1\n" > /tmp/none.tsv
  printf "# spire tuning cache 1\n" > /tmp/all.tsv
  for run in 1 2; do
    echo "$dev heuristics run $run: step $($B/spire lenet bench --batch 8192 --device $dev --runs 30 --tuning-cache /tmp/none.tsv 2>&1 | grep -E "^$dev " | awk '{print $3}')"
  done
  for spec in $CONFIGS; do
    line $backend "$spec" >> /tmp/all.tsv
    { printf "# spire tuning cache 1\n"; line $backend "$spec"; } > /tmp/one.tsv
    shape=${spec#*/}; shape=${shape%%=*}; shape=${shape%%_pooled*}  # kernel names carry no pooled-form suffix
    for run in 1 2; do
      r=$($B/spire lenet bench --batch 8192 --device $dev --runs 20 --profile --tuning-cache /tmp/one.tsv 2>&1 |
          grep -E "_${shape}_|warning" | awk '{printf "%s %s  ", $2, $NF}')
      s=$($B/spire lenet bench --batch 8192 --device $dev --runs 30 --tuning-cache /tmp/one.tsv 2>&1 | grep -E "^$dev " | awk '{print $3}')
      echo "$dev ${spec} run $run: step $s | $r"
    done
  done
  for run in 1 2; do
    echo "$dev all forced run $run: step $($B/spire lenet bench --batch 8192 --device $dev --runs 30 --tuning-cache /tmp/all.tsv 2>&1 | grep -E "^$dev " | awk '{print $3}')"
  done
done
