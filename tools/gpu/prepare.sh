#!/usr/bin/env bash
# Builds here and packs what the run scripts need on the lent GPU machine into .gpu/pack.tar.xz (ignored by git). The
# device tool carries it with .gl/ (Debian's Vulkan loader, validation layers and libfmt as .debs) under its 64 MiB;
# tools/gpu/env.sh unpacks it there. Always packed: the CLI, the four benchmarks (stripped), Fashion-MNIST, the
# transformer encoder layers exported here by Debian's torch (the GPU machine's torch cannot trace them) and random
# inputs for examples/custom_ops/silu_mlp.graph. Options (environment):
#   TESTS=1          also the test binaries the scripts' checks run (TESTS="spire_x_tests ...": only those; a smaller
#                    list keeps the pack under the carry limit)
#   ONNX=1           also ONNX's node tests of the counted and the typed sets and the imported encoder layer's gradient check, its
#                    float64 gradients computed here (run-checks.sh PARTS=onnx)
#   EMBED=1          also libspire_runtime, examples/embed's embed_demo built against an installed spire and the C API's
#                    own-VkDevice test app (run-bundles.sh)
#   BEFORE=DIR       also DIR/spire and DIR/spire_bench_* as spire_before and spire_bench_*_before: a build of the
#                    commit to compare with (e.g. a git worktree's build/bin), timed in the same run by run-lenet.sh,
#                    run-models.sh and run-matmul.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
bins="spire spire_bench_foundation spire_bench_matmul spire_bench_conv2d spire_bench_lenet_step"
tests=""
case "${TESTS:-0}" in
  0) ;;
  1) tests="spire_examples_tests spire_runtime_conformance_tests spire_cuda_tests spire_vulkan_tests spire_lowering_tests
            spire_lowering_heavy_tests spire_tuning_tests spire_training_tests" ;;
  *) tests=$TESTS ;;
esac
targets="$bins $tests"
[ "${ONNX:-0}" = 1 ] && targets="$targets test_onnx_models"
[ "${EMBED:-0}" = 1 ] && targets="$targets spire_runtime_shared test_bundle_app_vulkan"
# cmake --install (EMBED) installs the Python module too where it is configured: it must be built first.
[ "${EMBED:-0}" = 1 ] && cmake --build build --target help | grep "spire_python_module" > /dev/null && targets="$targets spire_python_module"
cmake --build build -j2 --target $targets
p=$(mktemp -d)
mkdir -p $p/bin $p/lib $p/data $p/models
for b in $bins; do cp build/bin/$b $p/bin/; done
for t in $tests; do cp "$(find build/tests -type f -name $t | head -1)" $p/bin/; done
if [ -n "${BEFORE:-}" ]; then
  for b in $bins; do [ -f "$BEFORE/$b" ] && cp "$BEFORE/$b" $p/bin/${b}_before; done
fi
cp /usr/share/datasets/fashion-mnist/*.gz $p/data/
/usr/bin/python3 benchmarks/torch_models.py $p/models --export-only encoder_op13 encoder_op17 2>&1 | grep -v Warn || true
/usr/bin/python3 - $p/mlp_in.safetensors <<'PY'
import sys; sys.path.insert(0, "tools/gpu")
import numpy as np
from safetensors_io import write_safetensors
r = np.random.default_rng(5)
u = lambda *s, k=1.0: (r.uniform(-k, k, s)).astype(np.float32)
write_safetensors(sys.argv[1], {"x": u(8, 128, k=2), "linear1.weight": u(64, 128, k=0.2), "linear1.bias": u(64, k=0.2),
                  "linear2.weight": u(128, 64, k=0.2), "linear2.bias": u(128, k=0.2)})
PY
if [ "${ONNX:-0}" = 1 ]; then
  mkdir -p $p/node $p/grad
  # The counted (targeted) set and the bar's typed set (788 of float32/int32/int64/bool tensors), whose names
  # run-checks.sh counts apart.
  sel=tests/frontend/onnx/select_node_tests.py
  { /usr/bin/python3 $sel /usr/share/libonnx-testdata/data/node; /usr/bin/python3 $sel --set typed; } | sort -u |
    while read -r d; do cp -r "$d" $p/node/; done
  /usr/bin/python3 $sel --set typed | xargs -n1 basename > $p/node_typed.txt
  models=build/tests/frontend/onnx/models
  [ -f $models/encoder13.onnx ] || /usr/bin/python3 tests/frontend/onnx/export_models.py $models >/dev/null
  g=$p/grad
  build/bin/spire import $models/encoder13.onnx -o $g/m.graph >/dev/null
  { cat $g/m.graph
    echo "loss_weight = input() : f32[2,10,128]"
    echo "weighted = mul(y, loss_weight) : f32[2,10,128]"
    echo "loss = sum(weighted) {axes=[0,1,2], keepdim=false} : f32[]"
    echo "output loss = loss"; } > $g/loss.graph
  build/bin/spire graph grad $g/loss.graph --loss loss --parameters -o $g/grad.graph
  /usr/bin/python3 tools/gpu/check_outputs.py feed $g/m.safetensors $models/encoder13.in.safetensors $g/feed.safetensors
  build/bin/spire graph eval $g/grad.graph --inputs $g/feed.safetensors --outputs $g/ref.safetensors
  rm $g/m.graph $g/loss.graph
fi
if [ "${EMBED:-0}" = 1 ]; then
  rm -rf /tmp/spire-embed-prefix /tmp/spire-embed-build
  cmake --install build --prefix /tmp/spire-embed-prefix > /dev/null
  cmake -S examples/embed -B /tmp/spire-embed-build -G Ninja -DCMAKE_PREFIX_PATH=/tmp/spire-embed-prefix > /dev/null
  cmake --build /tmp/spire-embed-build > /dev/null
  cp /tmp/spire-embed-build/embed_demo build/tests/bundle/test_bundle_app_vulkan $p/bin/
  cp -d /tmp/spire-embed-prefix/lib/libspire_runtime.so* $p/lib/
fi
strip $p/bin/* $p/lib/*.so.*.* 2>/dev/null || true
rm -rf .gpu && mkdir -p .gpu
tar cJf .gpu/pack.tar.xz -C $p .
rm -rf $p
du -sh .gpu/pack.tar.xz
