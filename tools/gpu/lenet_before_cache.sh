# Sourced by the GPU scripts that compare LeNet's step with the heuristics before 2026-11-26: writes /tmp/before.tsv,
# a tuning cache forcing the second convolution's previous forward and weight-gradient configs on both backends (the
# looped rows with their residency requests), and /tmp/none.tsv, an empty one (the heuristics). Needs nvidia-smi.
lenet_gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
lenet_vdrv="NVIDIA $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
lenet_conv2=n8192_c6_h14_w14_k16_r5x5_s1x1_p2x2_d1x1_g1
printf "# spire tuning cache 1\n" > /tmp/none.tsv
printf "# spire tuning cache 1\n" > /tmp/before.tsv
for backend in cuda vulkan; do
  if [ $backend = cuda ]; then id="cuda	$lenet_gpu	CUDA driver 13.0"; else id="vulkan	$lenet_gpu	$lenet_vdrv"; fi
  printf "$id\tconv2d\t$lenet_conv2\tf32\trows=1,wg=32,c_block=2,row_loop=1,per_core=24\t1\t1\n" >> /tmp/before.tsv
  printf "$id\tconv2d_grad_weight\t$lenet_conv2\tf32\tblock_rows=5,block_cols=5,wg=32,splits=64,row_mode=1,co_block=2,per_core=16\t1\t1\n" >> /tmp/before.tsv
done
