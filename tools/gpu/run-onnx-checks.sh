#!/usr/bin/env bash
# The ONNX issue's correctness checks on the lent GPU (after tools/gpu/prepare-onnx.sh; carry .gl .gpu):
# the seed LeNet trained 5 epochs on cuda:0 and vulkan:0 (each device's weights evaluated on the other), the op
# harness on every device, ONNX's node tests of the counted set on cuda:0, vulkan:0 and the reference, and an
# imported transformer encoder layer's parameter gradients against float64.
set -uo pipefail
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
$B/spire devices
for dev in cuda:0 vulkan:0; do
  tag=${dev/:/}
  timeout 200 $B/spire train lenet --device $dev --data .gpu/data --save $OUT/w_$tag.safetensors 2>&1 |
    grep -E "^(device|compiled|epoch [0-9]|test|saved)" | tee $OUT/train_$tag.txt
done
echo -n "cuda:0 weights on vulkan:0: "; $B/spire eval lenet --device vulkan:0 --data .gpu/data --load $OUT/w_cuda0.safetensors 2>&1 | tail -1
echo -n "vulkan:0 weights on cuda:0: "; $B/spire eval lenet --device cuda:0 --data .gpu/data --load $OUT/w_vulkan0.safetensors 2>&1 | tail -1
echo "== test-ops --device all"
$B/spire test-ops --device all > $OUT/test_ops.txt 2>&1; echo "exit $?"; tail -1 $OUT/test_ops.txt
grep FAIL $OUT/test_ops.txt | head -20
echo "== ONNX node tests (counted set)"
mapfile -t dirs < <(ls -d .gpu/node/*/)
echo "${#dirs[@]} tests"
for dev in reference cuda:0 vulkan:0; do
  $B/spire onnx-test "${dirs[@]}" --device $dev > $OUT/node_${dev/:/}.txt 2>&1
  echo "$dev: $(tail -1 $OUT/node_${dev/:/}.txt); wrong results: $(grep '^FAIL' $OUT/node_${dev/:/}.txt | grep -cE 'differs at element|but the test expects|no output')"
done
diff <(grep -o '^[A-Z]* test_[a-z0-9_]*' $OUT/node_cuda0.txt) <(grep -o '^[A-Z]* test_[a-z0-9_]*' $OUT/node_vulkan0.txt) && echo "same pass/fail set on cuda:0 and vulkan:0"
echo "== imported encoder layer: parameter gradients vs float64"
for dev in cuda:0 vulkan:0; do
  $B/spire graph eval .gpu/grad/grad.graph --inputs .gpu/grad/feed.safetensors --outputs /tmp/grad_${dev/:/}.safetensors --device $dev
done
python3 tools/gpu/compare_grads.py .gpu/grad/ref.safetensors /tmp/grad_cuda0.safetensors /tmp/grad_vulkan0.safetensors
