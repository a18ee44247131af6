#!/usr/bin/env bash
# LeNet's step before and after this session's two kernels for its second convolution (the weight gradient with every
# weight in one workgroup, GradWeightConfig::all_pairs; the forward pass staging whole images through ptxas,
# Conv2dConfig::images), interleaved, fresh processes, twice each: "before" forces the previous heuristics' configs
# through a tuning cache (nothing else of the step changed), "after" is the heuristic. Batch 8192 and 64 on both
# backends; the profile after; then 3 training epochs on each backend (Fashion-MNIST copied into .gpu/data from
# Debian's dataset-fashion-mnist). Pack spire.
set -uo pipefail
source tools/gpu/env.sh
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
drv="NVIDIA $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
b=n8192_c6_h14_w14_k16_r5x5_s1x1_p2x2_d1x1_g1
printf "# spire tuning cache 1\n" > /tmp/none.tsv
printf "# spire tuning cache 1\n" > /tmp/before.tsv
for backend in cuda vulkan; do
  if [ $backend = cuda ]; then id="cuda	$name	CUDA driver 13.0"; else id="vulkan	$name	$drv"; fi
  printf "$id\tconv2d\t$b\tf32\trows=1,wg=32,c_block=2,row_loop=1,per_core=24\t1\t1\n" >> /tmp/before.tsv
  printf "$id\tconv2d_grad_weight\t$b\tf32\tblock_rows=5,block_cols=5,wg=32,splits=64,row_mode=1,co_block=2,per_core=16\t1\t1\n" >> /tmp/before.tsv
done
step() { grep -E "^$1 |warning" | awk '/warning/ {printf "(a config was ignored!) "; next} {printf "%s", $3}'; }
for batch in 8192 64; do
  for dev in cuda:0 vulkan:0; do
    for run in 1 2; do
      before=$($B/spire lenet bench --batch $batch --device $dev --runs 30 --tuning-cache /tmp/before.tsv 2>&1 | step $dev)
      after=$($B/spire lenet bench --batch $batch --device $dev --runs 30 --tuning-cache /tmp/none.tsv 2>&1 | step $dev)
      echo "$dev b$batch run $run: before $before ms, after $after ms"
    done
  done
done
for dev in cuda:0 vulkan:0; do
  echo "== $dev b8192 profile after (ms, kernel), the top 12"
  $B/spire lenet bench --batch 8192 --device $dev --runs 20 --profile --tuning-cache /tmp/none.tsv 2>&1 |
    awk 'NF > 3 && $2 ~ /^[0-9.]+$/ {print $2, $NF}' | sort -rn | head -12
done
echo "== training epochs (3) on each backend"
for dev in cuda:0 vulkan:0; do
  echo "$dev:"; timeout 120 $B/spire train lenet --device $dev --data .gpu/data --epochs 3 2>&1 | grep -E "^epoch [0-9]:"
done
