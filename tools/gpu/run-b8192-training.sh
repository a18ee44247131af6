#!/usr/bin/env bash
# LeNet trained at batch 8192 (5 epochs, lr 0.1) with the second convolution's previous kernels forced through a tuning
# cache ("before") and with the heuristics ("after": the staged kernels of docs/PERFORMANCE.md), on both backends: the
# same seeds, so the losses and accuracies should agree to rounding. Needs .gpu/data (Debian's dataset-fashion-mnist
# files). Pack spire.
set -uo pipefail
source tools/gpu/env.sh
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
drv="NVIDIA $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
b=n8192_c6_h14_w14_k16_r5x5_s1x1_p2x2_d1x1_g1
printf "# spire tuning cache 1\n" > /tmp/none.tsv
printf "# spire tuning cache 1\n" > /tmp/before.tsv
for backend in cuda vulkan; do
  if [ $backend = cuda ]; then id="cuda	$name	CUDA driver 13.0"; else id="vulkan	$name	$drv"; fi
  printf "$id\tconv2d\t$b\tf32\trows=1,wg=32,c_block=2,row_loop=1,per_core=24\t1\t1\n" >> /tmp/before.tsv
  printf "$id\tconv2d_grad_weight\t$b\tf32\tblock_rows=5,block_cols=5,wg=32,splits=64,row_mode=1,co_block=2,per_core=16\t1\t1\n" >> /tmp/before.tsv
done
for dev in cuda:0 vulkan:0; do
  for which in before none; do
    echo "== $dev, $which:"
    timeout 200 $B/spire train lenet --device $dev --data .gpu/data --epochs 5 --batch 8192 --lr 0.1 \
      --tuning-cache /tmp/$which.tsv 2>&1 | grep -E "^epoch [0-9]:|warning"
  done
done
