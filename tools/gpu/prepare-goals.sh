#!/usr/bin/env bash
# Packs what tools/gpu/run-goals.sh needs into .gpu/pack.tar.xz (ignored by git; carried by the device tool with .gl/,
# under its 64 MiB; run-goals.sh unpacks it there): the CLI and the three benchmarks (stripped), the transformer
# encoder layers exported here by Debian's torch (the GPU machine's torch cannot export them), Fashion-MNIST. With
# TESTS=1 also the lowering, tuning, heavy-kernel, training and runtime conformance test binaries, to check kernels on the GPU in the same call.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
bins="spire spire_bench_matmul spire_bench_conv2d spire_bench_lenet_step"
tests="spire_lowering_tests spire_tuning_tests spire_lowering_heavy_tests spire_training_tests spire_runtime_conformance_tests"
targets=$bins
[ "${TESTS:-0}" = "1" ] && targets="$targets $tests"
cmake --build build -j2 --target $targets
p=$(mktemp -d)
mkdir -p $p/bin $p/data $p/models
for b in $bins; do cp build/bin/$b $p/bin/; done
if [ "${TESTS:-0}" = "1" ]; then for t in $tests; do cp "$(find build/tests -type f -name $t | head -1)" $p/bin/; done; fi
strip $p/bin/*
cp /usr/share/datasets/fashion-mnist/*.gz $p/data/
/usr/bin/python3 benchmarks/torch_models.py $p/models --export-only encoder_op13 encoder_op17 2>&1 | grep -v Warn || true
rm -rf .gpu && mkdir -p .gpu
tar cJf .gpu/pack.tar.xz -C $p bin data models
rm -rf $p
du -sh .gpu/pack.tar.xz
