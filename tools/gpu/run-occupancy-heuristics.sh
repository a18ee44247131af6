#!/usr/bin/env bash
# Issue 10 on the GPU machine: the occupancy requests' heuristics (conv2d_grad_weight per_core=16, conv2d 24,
# conv2d_grad_input 20 for LeNet's second convolution at batch 8192) against the configs without them, forced through
# a tuning cache, fresh processes, twice each: LeNet's step at batch 8192 (profiled) and 64 on cuda:0, and the
# heuristic on vulkan:0 (which ignores the requests). Pack spire.
set -uo pipefail
source tools/gpu/env.sh
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
id="cuda	$name	CUDA driver 13.0"
b=n8192_c6_h14_w14_k16_r5x5_s1x1_p2x2_d1x1_g1
printf "# spire tuning cache 1\n" > /tmp/none.tsv
{ printf "# spire tuning cache 1\n"
  printf "$id\tconv2d\t$b\tf32\trows=1,wg=32,c_block=2,row_loop=1\t1\t1\n"
  printf "$id\tconv2d_grad_input\t$b\tf32\trows=1,wg=32,c_block=3,row_loop=1\t1\t1\n"
  printf "$id\tconv2d_grad_weight\t$b\tf32\tblock_rows=5,block_cols=5,wg=32,splits=64,row_mode=1,co_block=2\t1\t1\n"
  printf "$id\tconv2d_grad_weight\tn64_c6_h14_w14_k16_r5x5_s1x1_p2x2_d1x1_g1\tf32\tblock_rows=5,block_cols=5,wg=32,splits=2,row_mode=1,co_block=2\t1\t1\n"
} > /tmp/before.tsv
step() { grep -E "^$1 " | awk '{print $NF}' | tr '\n' ' '; }
for batch in 8192 64; do
  runs=20; [ $batch = 64 ] && runs=200
  for cache in before none; do
    for run in 1 2; do
      echo "cuda:0 b$batch $cache run $run: $($B/spire lenet bench --batch $batch --device cuda:0 --runs $runs --tuning-cache /tmp/$cache.tsv 2>&1 | grep -E "^cuda:0 |warning" | tail -2 | tr '\n' ' ')"
    done
  done
done
for run in 1 2; do
  echo "vulkan:0 b8192 heuristic run $run: $($B/spire lenet bench --batch 8192 --device vulkan:0 --runs 20 --tuning-cache /tmp/none.tsv 2>&1 | grep -E "^vulkan:0 |warning" | tail -1)"
done
