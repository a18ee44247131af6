#!/usr/bin/env bash
# Launches that compute only from parameters run once, not every step (lowering/parameter_launches.h), on the H100:
# whole models at batch 1 and 64 on cuda:0 and vulkan:0 with the build before (.gpu/bin/spire_before: the same
# sources with mark_parameter_launches() left out of lower()) and after (.gpu/bin/spire), in the same run as PyTorch:
# resnet18 in float32 and the transformer encoder layers (tools/gpu/run-models.sh's), resnet18 in float16
# (tools/gpu/half_resnet18.py's); then each build's launch count per inference (spire run --profile).
# Here: TESTS=0 bash tools/gpu/prepare-goals.sh in the build tree, then add the before build as bin/spire_before to
# the pack (tar the folder again). There, carrying .gpu and .gl: bash tools/gpu/run-parameter-launches.sh
set -uo pipefail
source tools/gpu/env.sh
tar xJf .gpu/pack.tar.xz -C .gpu
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
M=/tmp/models
mkdir -p $M && cp .gpu/models/* $M/
python3 benchmarks/torch_models.py $M 2>&1 | grep -v Warn > /tmp/torch_models.txt
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
