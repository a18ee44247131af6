#!/usr/bin/env bash
# Issue 4 on the GPU machine: LeNet trained with the default recipe on cuda:0 and vulkan:0, each device's
# weights evaluated on the other, and one batch's logits compared across devices (and with lavapipe's,
# computed beforehand on the development machine and carried in .gpu/data/logits_lavapipe.safetensors).
set -uo pipefail
source tools/gpu/env.sh
D=.gpu/data
for dev in cuda:0 vulkan:0; do
  tag=${dev/:/}
  timeout 200 $B/spire train lenet --device $dev --data $D --save $OUT/w_$tag.safetensors 2>&1 | grep -E "^(device|compiled|epoch [0-9]:|saved)" | tee $OUT/train_$tag.txt
done
$B/spire eval lenet --device vulkan:0 --data $D --load $OUT/w_cuda0.safetensors
$B/spire eval lenet --device cuda:0 --data $D --load $OUT/w_vulkan0.safetensors
if [ -f $D/logits_in.safetensors ]; then
  for dev in cuda:0 vulkan:0; do
    $B/spire graph eval $D/lenet_forward.graph --inputs $D/logits_in.safetensors --outputs /tmp/logits_${dev/:/}.safetensors --device $dev
  done
  python3 tools/gpu/compare_logits.py $D/logits_lavapipe.safetensors /tmp/logits_cuda0.safetensors /tmp/logits_vulkan0.safetensors $D/logits_f64.safetensors
fi
