#!/usr/bin/env bash
# The bundle rows of docs/PERFORMANCE.md: resnet18 and resnet50 (torchvision, random weights) compiled there into
# bundles and run without the compiler. PARTS (default "io startup"):
#   io        a bundle for batch 1 (spire compile --batch 1 --targets spirv,ptx,ptx:sm_90) run as an application runs it
#             (input set from host memory, run, output read back): spire run MODEL.spire --bench 200 prints the device
#             time and the wall time of the three; on vulkan:0 also with SPIRE_VULKAN_FORCE_STAGING=1 (the input through
#             a feed the run copies in, as on cuda:0, instead of written in place into mapped device memory); outputs
#             checked against PyTorch's
#   startup   one bundle with a dynamic batch (plans for 1, 2, 4, 8; SPIR-V and PTX): its compile time and size,
#             examples/embed's embed_demo (C, through libspire_runtime) at batches 1, 3 and 8 against PyTorch, the
#             wall time from process start to the first result, cold (empty caches) and warm, with spire's caches or
#             the drivers' own, PyTorch eager's for scale; then the C API on the test app's own VkDevice and
#             VkBuffers (spire_vulkan.h) under the validation layer; then resnet50 at batch 1 (spirv,ptx,ptx:sm_90)
#             through embed_demo --profile-startup on vulkan:0 and cuda:0, cold (spire's and the drivers' caches
#             empty) and warm (the runs after): where the time from process start to the first result goes
# Here: EMBED=1 bash tools/gpu/prepare.sh. There, carrying .gpu and .gl: bash tools/gpu/run-bundles.sh
set -uo pipefail
source tools/gpu/env.sh
W=/tmp/bundles && rm -rf $W && mkdir -p $W
python3 tests/bundle/export_torchvision.py $W/models 2>&1 | grep -v Warn | tail -2
for part in ${PARTS:-io startup}; do
  echo "======== $part"
  case $part in
  io)
    $B/spire compile $W/models/resnet18.onnx -o $W/b1.spire --batch 1 --targets spirv,ptx,ptx:sm_90 2>&1 | grep -v "compiling plans" | tail -3
    for run in "vulkan:0 0" "vulkan:0 1" "cuda:0 0" "vulkan:0 0" "vulkan:0 1" "cuda:0 0"; do
      set -- $run
      echo "== $1, SPIRE_VULKAN_FORCE_STAGING=$2"
      SPIRE_VULKAN_FORCE_STAGING=$2 $B/spire run $W/b1.spire --inputs $W/models/in_b1.safetensors \
        --outputs $W/out.safetensors --device $1 --bench ${RUNS:-200} | tail -1
      python3 tests/bundle/compare_outputs.py $W/out.safetensors $W/models/torch_b1.safetensors 1e-4
    done | tee $OUT/bundle_io.txt
    ;;
  startup)
    s=$EPOCHREALTIME
    $B/spire compile $W/models/resnet18.onnx -o $W/resnet18.spire --dynamic-batch --batch 8 2>&1 | grep -v "compiling plans"
    echo "spire compile: $(awk -v a=$s -v b=$EPOCHREALTIME 'BEGIN {printf "%.1f", b - a}') s, $(stat -c %s $W/resnet18.spire) bytes"
    for dev in vulkan:0 cuda:0; do
      for b in 1 3 8; do
        $B/embed_demo $W/resnet18.spire $W/models/in_b$b.safetensors $W/out_$b.safetensors $dev | grep "ran at"
        echo -n "$dev batch $b against PyTorch: "
        python3 tests/bundle/compare_outputs.py $W/out_$b.safetensors $W/models/torch_b$b.safetensors 1e-4
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
    s=$EPOCHREALTIME
    python3 - <<'PY'
import torch, torchvision
torch.manual_seed(0); m = torchvision.models.resnet18().eval().cuda(); x = torch.randn(1, 3, 224, 224).cuda()
with torch.no_grad(): y = m(x); torch.cuda.synchronize()
PY
    echo "PyTorch eager: $(awk -v a=$s -v b=$EPOCHREALTIME 'BEGIN {printf "%.2f", b - a}') s from process start to the first result"
    echo "== the C API on the test app's own VkDevice and VkBuffers, validation layer on"
    SPIRE_VULKAN_VALIDATION=1 $B/test_bundle_app_vulkan --gtest_brief=1 2>&1 | tail -6
    echo "== resnet50 batch 1: embed_demo --profile-startup, cold (every cache empty) then warm"
    python3 tests/bundle/export_torchvision.py $W/r50 resnet50 2>&1 | grep -v Warn | tail -2
    $B/spire compile $W/r50/resnet50.onnx -o $W/resnet50.spire --batch 1 --targets spirv,ptx,ptx:sm_90 2>&1 \
      | grep -v "compiling plans" | tail -1
    for dev in vulkan:0 cuda:0; do
      export SPIRE_CACHE_DIR=$W/c50-$dev/spire XDG_CACHE_HOME=$W/c50-$dev/xdg __GL_SHADER_DISK_CACHE_PATH=$W/c50-$dev/nv \
        CUDA_CACHE_PATH=$W/c50-$dev/cu
      rm -rf $W/c50-$dev $W/o50.safetensors
      for run in cold warm1 warm2 warm3; do
        echo "-- $dev $run"
        s=$EPOCHREALTIME
        $B/embed_demo --profile-startup $W/resnet50.spire $W/r50/in_b1.safetensors $W/o50.safetensors $dev | grep -v "^wrote"
        echo "process wall to exit: $(awk -v a=$s -v b=$EPOCHREALTIME 'BEGIN {printf "%.3f", b - a}') s"
      done
      echo -n "$dev resnet50 against PyTorch: "
      python3 tests/bundle/compare_outputs.py $W/o50.safetensors $W/r50/torch_b1.safetensors 1e-4
      unset SPIRE_CACHE_DIR XDG_CACHE_HOME __GL_SHADER_DISK_CACHE_PATH CUDA_CACHE_PATH
    done | tee $OUT/startup_resnet50.txt
    ;;
  *) echo "unknown part '$part'"; exit 2 ;;
  esac
done
