#!/usr/bin/env bash
# A bundle run as an application makes it (inputs set from host memory, the run, outputs read back) on vulkan:0 and
# cuda:0: `spire run MODEL.spire --bench 200` prints the device time and the wall time of the three. resnet18
# (torchvision, random weights) at batch 1, compiled there for spirv, ptx and ptx:sm_90; on vulkan:0 also with
# SPIRE_VULKAN_FORCE_STAGING=1, where the input goes through a host-visible feed buffer the run copies in (as on cuda:0)
# instead of being written in place into mapped device memory.
# Here: bash tools/gpu/prepare-embed.sh. There, carrying .gpu and .gl: bash tools/gpu/run-bundle-io.sh.
set -uo pipefail
source tools/gpu/env.sh
export LD_LIBRARY_PATH=$PWD/.gpu/lib:$LD_LIBRARY_PATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
W=/tmp/bundle-io && rm -rf $W && mkdir -p $W
python3 tests/bundle/export_resnet18.py $W/models 2>&1 | grep -v Warn | tail -1
$B/spire compile $W/models/resnet18.onnx -o $W/resnet18.spire --batch 1 --targets spirv,ptx,ptx:sm_90 2>&1 | grep -v "compiling plans" | tail -3
for run in "vulkan:0 0" "vulkan:0 1" "cuda:0 0" "vulkan:0 0" "vulkan:0 1" "cuda:0 0"; do
  set -- $run
  echo "== $1, SPIRE_VULKAN_FORCE_STAGING=$2"
  SPIRE_VULKAN_FORCE_STAGING=$2 $B/spire run $W/resnet18.spire --inputs $W/models/in_b1.safetensors \
    --outputs $W/out.safetensors --device $1 --bench ${RUNS:-200} | tail -1
  python3 tests/bundle/compare_outputs.py $W/out.safetensors $W/models/torch_b1.safetensors 1e-4
done
