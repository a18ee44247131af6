#!/usr/bin/env bash
# Issue 9 (custom ops) on the GPU machine: the seed LeNet trained 5 epochs with the custom ReLU, the GLSL
# kernel on vulkan:0 and the kernel-builder kernel on cuda:0 and vulkan:0 (and the built-in ReLU beside them);
# the example ops against their CPU references on every device; the SiLU MLP's gradients through --ops.
# Needs .gpu/bin/spire, .gpu/data and .gpu/mlp_in.safetensors (tools/gpu/prepare-custom-ops.sh).
set -uo pipefail
source tools/gpu/env.sh
D=.gpu/data
for run in "vulkan:0 custom" "vulkan:0 custom-builder" "cuda:0 custom-builder" "cuda:0 builtin" "vulkan:0 builtin"; do
  set -- $run
  echo "== train lenet --device $1 --relu $2"
  timeout 200 $B/spire train lenet --device $1 --relu $2 --data $D 2>&1 | grep -E "^(ReLU|device|compiled|epoch [0-9]:)"
done
echo "== GLSL op on cuda:0 (must be refused by name)"
timeout 60 $B/spire train lenet --device cuda:0 --relu custom --data $D --epochs 1 2>&1 | tail -1
echo "== test-ops --ops examples/custom_ops --device all"
timeout 200 $B/spire test-ops --ops examples/custom_ops --device all 2>&1 | grep -E "^seed_|passed" | grep -v " pass$" | tail -5
timeout 200 $B/spire test-ops --ops examples/custom_ops --device all 2>&1 | grep -cE "^seed_.* pass$"
echo "== SiLU MLP: graph grad --ops, then graph eval on the reference, vulkan:0 (GLSL) and cuda:0 (refused)"
$B/spire graph grad --ops examples/custom_ops/seed_silu.op examples/custom_ops/silu_mlp.graph --loss loss --parameters -o /tmp/mlp.graph 2>&1 | tail -1
for dev in reference vulkan:0 cuda:0; do
  if [ $dev = reference ]; then flag=""; else flag="--device $dev"; fi
  $B/spire graph eval --ops examples/custom_ops/seed_silu.op /tmp/mlp.graph --inputs .gpu/mlp_in.safetensors --outputs /tmp/mlp_${dev/:/}.safetensors $flag 2>&1 | tail -1
done
python3 - <<'PY'
import sys; sys.path.insert(0, "tools/gpu")
import numpy as np
from safetensors_io import read_safetensors
ref, got = read_safetensors("/tmp/mlp_reference.safetensors"), read_safetensors("/tmp/mlp_vulkan0.safetensors")
for k in sorted(ref):
    r = ref[k].astype(np.float64); g = got[k].astype(np.float64)
    print(f"{k:28s} max-norm error vs float64 {np.abs(g - r).max() / max(1.0, np.abs(r).max()):.2e}")
PY
