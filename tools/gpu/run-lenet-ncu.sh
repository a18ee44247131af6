#!/usr/bin/env bash
# Nsight Compute on LeNet's heaviest kernels at batch 8192 on cuda:0 (heuristic configs): for each, its registers,
# achieved occupancy, duration, compute and memory throughput, and warp cycles per issued instruction, to pick the
# next kernel work. KERNELS: kernel-name regexes. Pack spire.
set -uo pipefail
source tools/gpu/env.sh
for k in ${KERNELS:-conv2d_grad_input_n8192_c6 conv2d_n8192_c6 conv2d_grad_weight_n8192_c6 matmul_m120_k8192_n784 matmul_m8192_k120_n784 matmul_m8192_k784_n120 conv2d_grad_weight_n8192_c1 conv2d_n8192_c1 max_pool2d_n8192_c6}; do
  echo "== $k"
  timeout 120 /usr/local/cuda/bin/ncu --kernel-name regex:"$k" --launch-count 1 --section LaunchStats --section Occupancy \
    --section SpeedOfLight --section WarpStateStats $B/spire lenet bench --batch 8192 --device cuda:0 --runs 1 2>&1 |
    grep -E "Registers Per Thread|Achieved Occupancy|^    Duration|Compute \(SM\) Throughput|Memory Throughput|Warp Cycles Per Issued|Block Size|Shared Memory Configuration Size" |
    sed 's/  */ /g' | head -10
done
