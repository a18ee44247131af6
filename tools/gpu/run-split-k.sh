#!/usr/bin/env bash
# The split-K rule (choose_matmul_tiling: at least 256 workgroups, a power of two of splits) against the binary from
# before it (.gpu/pack-base.tar.xz, unpacked into .gpu/base), interleaved, fresh processes: LeNet's step at batch 8192
# profiled (the weight gradients' products) on both backends and at batch 64 on cuda:0. Pack spire as usual and the
# earlier one as pack-base.tar.xz.
set -uo pipefail
source tools/gpu/env.sh
mkdir -p .gpu/base && tar xJf .gpu/pack-base.tar.xz -C .gpu/base
printf "# spire tuning cache 1\n" > /tmp/none.tsv
for dev in cuda:0 vulkan:0; do
  for run in 1 2; do
    for bin in .gpu/base/bin/spire $B/spire; do
      r=$($bin lenet bench --batch 8192 --device $dev --runs 20 --profile --tuning-cache /tmp/none.tsv 2>&1 |
          grep -E "matmul_m(120|84|10)_k8192|matmul_sum_m(120|84|10)_k8192|^$dev " | awk '{printf "%s %s  ", $2, $NF}')
      echo "$dev $(basename $(dirname $(dirname $bin))) run $run: $r"
    done
  done
done
for run in 1 2; do
  for bin in .gpu/base/bin/spire $B/spire; do
    echo "cuda:0 b64 $(basename $(dirname $(dirname $bin))) run $run: $($bin lenet bench --batch 64 --device cuda:0 --runs 200 --tuning-cache /tmp/none.tsv 2>&1 | grep -E "^cuda:0 ")"
  done
done
