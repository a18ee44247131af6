#!/usr/bin/env bash
# Issue 8 on the lent GPU: one resnet18 bundle (dynamic batch 1..8, SPIR-V and PTX) compiled there, run by
# examples/embed's embed_demo through libspire_runtime on vulkan:0 and cuda:0 at batches 1, 3 and 8 against
# PyTorch, and the time from process start to the first result, cold (empty caches) and warm (three runs).
# Here first: tools/gpu/prepare-embed.sh; carry .gpu and .gl.
set -uo pipefail
source tools/gpu/env.sh
export LD_LIBRARY_PATH=$PWD/.gpu/lib:$LD_LIBRARY_PATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
W=/tmp/embed && rm -rf $W && mkdir -p $W
python3 tests/bundle/export_resnet18.py $W/models 2>&1 | grep -v Warn | tail -2
s=$EPOCHREALTIME
$B/spire compile $W/models/resnet18.onnx -o $W/resnet18.spire --dynamic-batch --batch 8 2>&1 | grep -v "compiling plans"
echo "spire compile: $(awk -v a=$s -v b=$EPOCHREALTIME 'BEGIN {printf "%.1f", b - a}') s"
ls -l $W/resnet18.spire
for dev in vulkan:0 cuda:0; do
  for b in 1 3 8; do
    $B/embed_demo $W/resnet18.spire $W/models/in_b$b.safetensors $W/out_$b.safetensors $dev | grep "ran at"
    echo -n "$dev batch $b vs PyTorch: "; python3 tests/bundle/compare_outputs.py $W/out_$b.safetensors $W/models/torch_b$b.safetensors 1e-4
  done
done
echo "== time from process start to the first result (embed_demo, batch 1; wall seconds)"
# 'drivers': spire's caches off, the drivers' own shader/JIT caches on (what an app gets without spire's cache);
# 'spire': spire's pipeline and module caches on, the drivers' off, so the gain is spire's own.
for dev in vulkan:0 cuda:0; do
  for mode in drivers spire; do
    export SPIRE_CACHE_DIR=$W/cache-$dev-$mode XDG_CACHE_HOME=$W/xdg-$dev-$mode
    rm -rf $W/cache-$dev-$mode $W/xdg-$dev-$mode $W/nv-$dev $W/cu-$dev
    if [ $mode = drivers ]; then
      export SPIRE_NO_DISK_CACHE=1 __GL_SHADER_DISK_CACHE_PATH=$W/nv-$dev CUDA_CACHE_PATH=$W/cu-$dev
    else
      unset SPIRE_NO_DISK_CACHE; export __GL_SHADER_DISK_CACHE=0 CUDA_CACHE_DISABLE=1
    fi
    for run in cold warm1 warm2 warm3; do
      s=$EPOCHREALTIME; $B/embed_demo $W/resnet18.spire $W/models/in_b1.safetensors $W/t.safetensors $dev > /dev/null; e=$EPOCHREALTIME
      echo "$dev caches=$mode $run $(awk -v a=$s -v b=$e 'BEGIN {printf "%.3f", b - a}')"
    done
    unset SPIRE_CACHE_DIR XDG_CACHE_HOME __GL_SHADER_DISK_CACHE_PATH CUDA_CACHE_PATH __GL_SHADER_DISK_CACHE CUDA_CACHE_DISABLE SPIRE_NO_DISK_CACHE
  done
done | tee $OUT/startup.txt
echo "== the C API on the test app's own VkDevice and VkBuffers (spire_vulkan.h), validation layer on"
SPIRE_VULKAN_VALIDATION=1 $B/test_bundle_app_vulkan --gtest_brief=1 2>&1 | tail -6
echo "== PyTorch AOTInductor: resnet18 package (dynamic batch 1..8), load + first run in a fresh process"
python3 tools/gpu/aoti_resnet18.py build $W 2>&1 | grep -E "^aoti" | tail -2
for run in first warm1 warm2; do python3 tools/gpu/aoti_resnet18.py first $W 2>&1 | grep -E "^aoti" | sed "s/^/$run: /"; done
echo "== spire run of the bundle, replayed (device timestamps)"
for dev in vulkan:0 cuda:0; do for b in 1 8; do
  $B/spire run $W/resnet18.spire --inputs $W/models/in_b$b.safetensors --outputs $W/r.safetensors --device $dev --bench 30 | tail -1
done; done
echo "== PyTorch eager, same model, first result from process start and replay"
s=$EPOCHREALTIME
python3 - <<'PY'
import time, torch, torchvision
t0 = time.time(); torch.manual_seed(0); m = torchvision.models.resnet18().eval().cuda(); x = torch.randn(1, 3, 224, 224).cuda()
with torch.no_grad(): y = m(x); torch.cuda.synchronize()
print(f"torch eager cuda first result {time.time() - t0:.2f} s after import")
PY
echo "torch eager: $(awk -v a=$s -v b=$EPOCHREALTIME 'BEGIN {printf "%.2f", b - a}') s from process start to the first result"
