#!/usr/bin/env bash
# One of LeNet's second (LAYER=conv1: first) convolution's three kernels at batch 8192 under given configs against the
# heuristic, on both backends: a one-line tuning cache per config, fresh processes, `spire lenet bench --profile` (the
# op's launches: the kernel, and a weight gradient's partial sums) and the unprofiled step, twice each. Pack spire.
# OP: conv2d (default), conv2d_grad_input or conv2d_grad_weight. CONFIGS: config texts (each one of the op's
# candidates; one that is not is ignored with a warning, which the line shows), e.g. for the staged kernels of
# docs/PERFORMANCE.md: OP=conv2d "rows=1,wg=224,c_block=1,images=1"; OP=conv2d_grad_weight
# "block_rows=5,block_cols=5,wg=128,splits=512,row_mode=1,co_block=4,all_pairs=1". KEY_SUFFIX: appended to the shape
# in the tuning key, e.g. "_pooled_k2x2_relu" for the first convolution's weight gradient computing its pooling
# gradient (lower_conv2d.cpp's pooled form).
set -uo pipefail
source tools/gpu/env.sh
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
vdrv="NVIDIA $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
shape=n8192_c6_h14_w14_k16_r5x5_s1x1_p2x2_d1x1_g1
[ "${LAYER:-conv2}" = conv1 ] && shape=n8192_c1_h28_w28_k6_r5x5_s1x1_p2x2_d1x1_g1
op=${OP:-conv2d}
for dev in cuda:0 vulkan:0; do
  backend=${dev%%:*}; drv="CUDA driver 13.0"; [ $backend = vulkan ] && drv=$vdrv
  for c in heuristic ${CONFIGS:-}; do
    f=/tmp/tc_lenet_conv2.tsv
    printf "# spire tuning cache 1\n" > $f
    [ $c != heuristic ] && printf "$backend\t$name\t$drv\t$op\t$shape${KEY_SUFFIX:-}\tf32\t$c\t1\t1\n" >> $f
    for run in 1 2; do
      r=$($B/spire lenet bench --batch 8192 --device $dev --runs 20 --profile --tuning-cache $f 2>&1 |
          grep -E " ${op}(_sum)?_${shape}|^$dev |warning" | awk '{printf "%s %s  ", $2, $NF}')
      s=$($B/spire lenet bench --batch 8192 --device $dev --runs 30 --tuning-cache $f 2>&1 | grep -E "^$dev " | awk '{print $3}')
      echo "$dev $c run $run: step $s | $r"
    done
  done
done
