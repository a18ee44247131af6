#!/usr/bin/env bash
# What the two compilers made of conv2d_images_kernel.h's configs (LeNet's second convolution, batch 8192): Vulkan
# pipeline statistics (SPIRE_VULKAN_PIPELINE_STATS) and Nsight Compute's launch, occupancy and warp-state sections on
# cuda:0. CONFIGS: "c_block,wg" each. Pack spire.
set -uo pipefail
source tools/gpu/env.sh
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
vdrv="NVIDIA $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
shape=n8192_c6_h14_w14_k16_r5x5_s1x1_p2x2_d1x1_g1
for c in ${CONFIGS:-1,224 2,112 4,56}; do
  IFS=, read cob wg <<< "$c"
  cfg="rows=1,wg=$wg,c_block=$cob,images=1"
  printf "# spire tuning cache 1\nvulkan\t$name\t$vdrv\tconv2d\t$shape\tf32\t$cfg\t1\t1\n" > /tmp/tc_v.tsv
  printf "# spire tuning cache 1\ncuda\t$name\tCUDA driver 13.0\tconv2d\t$shape\tf32\t$cfg\t1\t1\n" > /tmp/tc_c.tsv
  echo "== $cfg"
  SPIRE_VULKAN_PIPELINE_STATS=1 $B/spire lenet bench --batch 8192 --device vulkan:0 --runs 1 --tuning-cache /tmp/tc_v.tsv 2>&1 |
    grep "pipeline 'conv2d_n8192_c6" | sed -e "s/pipeline '[^']*'/pipeline/"
  timeout 120 /usr/local/cuda/bin/ncu --kernel-name regex:"conv2d_n8192_c6.*images" --launch-count 1 --section LaunchStats \
    --section Occupancy --section SpeedOfLight --section WarpStateStats $B/spire lenet bench --batch 8192 --device cuda:0 --runs 1 \
    --tuning-cache /tmp/tc_c.tsv 2>&1 | grep -E "Registers Per Thread|Achieved Occupancy|^    Duration|Compute \(SM\) Throughput|Memory Throughput|Stall|Warp Cycles Per Issued|Block Limit" | sed 's/  */ /g' | head -14
done
