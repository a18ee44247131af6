#!/usr/bin/env bash
# Builds here and packs what a run on the lent GPU machine needs into .gpu/ (ignored by git, carried by the
# device tool together with .gl/, which holds Debian's Vulkan loader, validation layers and libfmt .debs).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
targets="spire spire_bench_foundation spire_bench_matmul spire_bench_conv2d spire_examples_tests spire_runtime_conformance_tests spire_cuda_tests spire_vulkan_tests"
[ -n "${EXTRA_TARGETS:-}" ] && targets="$targets $EXTRA_TARGETS"
cmake --build build -j2 --target $targets
rm -rf .gpu && mkdir -p .gpu/bin .gpu/data
cp build/bin/spire build/bin/spire_bench_foundation .gpu/bin/
for b in spire_bench_lenet_step spire_bench_matmul spire_bench_conv2d; do
  [ -f build/bin/$b ] && cp build/bin/$b .gpu/bin/
done
for t in $targets; do
  f=$(find build/tests -type f -name "$t" | head -1)
  [ -n "$f" ] && cp "$f" .gpu/bin/
done
strip .gpu/bin/*
if [ "${WITH_DATA:-0}" = "1" ]; then cp /usr/share/datasets/fashion-mnist/*.gz .gpu/data/; fi
du -sh .gpu
