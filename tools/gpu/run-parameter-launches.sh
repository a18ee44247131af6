#!/usr/bin/env bash
# Launches that compute only from parameters run once, not every step (lowering/parameter_launches.h), on the H100:
# whole models at batch 1 and 64 on cuda:0 and vulkan:0 with the build before (.gpu/bin/spire_before: the same
# sources with mark_parameter_launches() left out of lower()) and after (.gpu/bin/spire), in the same run as PyTorch:
# resnet18 in float32 and the transformer encoder layers (tools/gpu/run-models.sh's), resnet18 in float16
# (tools/gpu/half_resnet18.py's); then each build's launch count per inference (spire run --profile).
# Then resnet18 (f32) as a bundle at batch 1 for spirv and ptx (spire compile), run by each build's own bundle runtime
# (spire run MODEL.spire --bench 50). PART=models or PART=bundles runs only that part.
# Here: TESTS=0 bash tools/gpu/prepare-goals.sh in the build tree, then add the before build as bin/spire_before to
# the pack (tar the folder again). There, carrying .gpu and .gl: bash tools/gpu/run-parameter-launches.sh
set -uo pipefail
source tools/gpu/env.sh
tar xJf .gpu/pack.tar.xz -C .gpu
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
part=${PART:-all}
M=/tmp/models
mkdir -p $M && cp .gpu/models/* $M/
python3 benchmarks/torch_models.py $M 2>&1 | grep -v Warn > /tmp/torch_models.txt
if [ "$part" != bundles ]; then
python3 tools/gpu/half_resnet18.py $M 2>&1 | grep -v Warn >> /tmp/torch_models.txt
cat /tmp/torch_models.txt
for build in spire_before spire; do
  echo "== $build"
  python3 tools/gpu/models_table.py $B/$build $M /tmp/torch_models.txt 2>&1
done
echo "== launches per inference at batch 1 (before, after)"
for m in resnet18 resnet18_f16; do
  for d in cuda:0 vulkan:0; do
    n=""
    for build in spire_before spire; do
      n="$n $($B/$build run $M/$m.onnx --inputs $M/$m.b1.in.safetensors --outputs /tmp/o.safetensors --device $d \
        --profile --bench 3 2>&1 | grep -cE '^ +[0-9]+ +[0-9.]+ ')"
    done
    echo "$m $d $n"
  done
done
fi
if [ "$part" != models ]; then
  echo "== resnet18 f32 bundle at batch 1: median device ms, then the median wall time of a run from host memory"
  for build in spire_before spire; do
    $B/$build compile $M/resnet18.onnx -o /tmp/r18_$build.spire --batch 1 --targets spirv,ptx 2>&1 | tail -1
    for d in cuda:0 vulkan:0; do
      echo "$build $d: $($B/$build run /tmp/r18_$build.spire --inputs $M/resnet18.b1.in.safetensors --outputs /tmp/o_$build.safetensors \
        --device $d --bench 50 2>&1 | grep -E "^$d|wall" | tr '\n' ' ')"
    done
  done
  python3 - <<'PY'
import sys
sys.path.insert(0, "tools/gpu")
import numpy as np
from safetensors_io import read_safetensors
a, b = read_safetensors("/tmp/o_spire_before.safetensors")["y"], read_safetensors("/tmp/o_spire.safetensors")["y"]
print("bundle outputs, largest difference between the builds:", float(np.abs(a.astype(np.float64) - b).max()))
PY
fi
