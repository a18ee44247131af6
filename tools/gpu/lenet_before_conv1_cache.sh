# Sourced by the GPU scripts comparing LeNet's step with the heuristics before 2026-11-26's second session (BEFORE=this
# file): writes /tmp/before.tsv, a tuning cache forcing the first convolution's previous forward (the shared_w
# elements) and weight-gradient (the staged rows) configs on both backends, and /tmp/none.tsv, an empty one (the
# heuristics). Needs nvidia-smi.
lenet_gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
lenet_vdrv="NVIDIA $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
lenet_conv1=n8192_c1_h28_w28_k6_r5x5_s1x1_p2x2_d1x1_g1
printf "# spire tuning cache 1\n" > /tmp/none.tsv
printf "# spire tuning cache 1\n" > /tmp/before.tsv
for backend in cuda vulkan; do
  if [ $backend = cuda ]; then id="cuda	$lenet_gpu	CUDA driver 13.0"; else id="vulkan	$lenet_gpu	$lenet_vdrv"; fi
  printf "$id\tconv2d\t$lenet_conv1\tf32\trows=0,wg=64,c_block=6,shared_w=1,pixels=16\t1\t1\n" >> /tmp/before.tsv
  printf "$id\tconv2d_grad_weight\t$lenet_conv1\tf32\tblock_rows=5,block_cols=5,wg=64,splits=220,row_mode=1,staged=1\t1\t1\n" >> /tmp/before.tsv
done
