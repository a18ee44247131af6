# Sourced by the GPU scripts that compare LeNet's step with earlier heuristics (run-session-images.sh,
# run-b8192-training.sh): writes /tmp/before.tsv, a tuning cache forcing one layer's previous configs on both
# backends, and /tmp/none.tsv, an empty one (the heuristics). Needs nvidia-smi. BEFORE picks the layer:
#   conv2 (default): the second convolution's forward and weight gradient before 2026-11-26 (the looped rows with
#     their residency requests), before Conv2dConfig::images and GradWeightConfig::all_pairs;
#   conv1: the first convolution's forward (the shared_w elements) and weight gradient (the staged rows) before the
#     strips and row_split of 2026-11-26's second session.
lenet_gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
lenet_vdrv="NVIDIA $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
if [ "${BEFORE:-conv2}" = conv1 ]; then
  lenet_shape=n8192_c1_h28_w28_k6_r5x5_s1x1_p2x2_d1x1_g1
  lenet_forward=rows=0,wg=64,c_block=6,shared_w=1,pixels=16
  lenet_grad_weight=block_rows=5,block_cols=5,wg=64,splits=220,row_mode=1,staged=1
else
  lenet_shape=n8192_c6_h14_w14_k16_r5x5_s1x1_p2x2_d1x1_g1
  lenet_forward=rows=1,wg=32,c_block=2,row_loop=1,per_core=24
  lenet_grad_weight=block_rows=5,block_cols=5,wg=32,splits=64,row_mode=1,co_block=2,per_core=16
fi
printf "# spire tuning cache 1\n" > /tmp/none.tsv
printf "# spire tuning cache 1\n" > /tmp/before.tsv
for backend in cuda vulkan; do
  if [ $backend = cuda ]; then id="cuda	$lenet_gpu	CUDA driver 13.0"; else id="vulkan	$lenet_gpu	$lenet_vdrv"; fi
  printf "$id\tconv2d\t$lenet_shape\tf32\t$lenet_forward\t1\t1\n" >> /tmp/before.tsv
  printf "$id\tconv2d_grad_weight\t$lenet_shape\tf32\t$lenet_grad_weight\t1\t1\n" >> /tmp/before.tsv
done
