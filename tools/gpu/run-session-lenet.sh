#!/usr/bin/env bash
# LeNet's step before and after this session's heuristics (occupancy requests, split-K), interleaved, fresh processes,
# twice each: "before" is the binary from before the split-K rule (.gpu/pack-base.tar.xz) with a tuning cache that
# removes the occupancy requests; "after" is the current binary with an empty cache. Batch 8192 on both backends and
# batch 64 on cuda:0. Pack spire, and the earlier binary as pack-base.tar.xz.
set -uo pipefail
source tools/gpu/env.sh
mkdir -p .gpu/base && tar xJf .gpu/pack-base.tar.xz -C .gpu/base
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
drv="NVIDIA $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
b=n8192_c6_h14_w14_k16_r5x5_s1x1_p2x2_d1x1_g1
printf "# spire tuning cache 1\n" > /tmp/none.tsv
rm -f /tmp/before.tsv
for backend in cuda vulkan; do
  if [ $backend = cuda ]; then id="cuda	$name	CUDA driver 13.0"; else id="vulkan	$name	$drv"; fi
  { [ $backend = cuda ] && printf "# spire tuning cache 1\n"
    printf "$id\tconv2d\t$b\tf32\trows=1,wg=32,c_block=2,row_loop=1\t1\t1\n"
    printf "$id\tconv2d_grad_input\t$b\tf32\trows=1,wg=32,c_block=3,row_loop=1\t1\t1\n"
    printf "$id\tconv2d_grad_weight\t$b\tf32\tblock_rows=5,block_cols=5,wg=32,splits=64,row_mode=1,co_block=2\t1\t1\n"
  } >> /tmp/before.tsv
done
step() { grep -E "^$1 " | awk '{print $3}'; }
for dev in cuda:0 vulkan:0; do
  for run in 1 2; do
    before=$(.gpu/base/bin/spire lenet bench --batch 8192 --device $dev --runs 30 --tuning-cache /tmp/before.tsv 2>&1 | step $dev)
    after=$($B/spire lenet bench --batch 8192 --device $dev --runs 30 --tuning-cache /tmp/none.tsv 2>&1 | step $dev)
    echo "$dev b8192 run $run: before $before ms, after $after ms"
  done
done
for run in 1 2; do
  before=$(.gpu/base/bin/spire lenet bench --batch 64 --device cuda:0 --runs 200 --tuning-cache /tmp/before.tsv 2>&1 | step cuda:0)
  after=$($B/spire lenet bench --batch 64 --device cuda:0 --runs 200 --tuning-cache /tmp/none.tsv 2>&1 | step cuda:0)
  echo "cuda:0 b64 run $run: before $before ms, after $after ms"
done
