#!/usr/bin/env bash
# Imported models (test-time exports in .gpu/models: MODEL.onnx and MODEL.in.safetensors, copied from
# build/tests/onnx/models) run once on every device with `spire run --device all`: each device's outputs against the
# float64 evaluator's. A check of the backends' code generation on real models. Pack spire.
set -uo pipefail
source tools/gpu/env.sh
for m in .gpu/models/*.onnx; do
  name=$(basename $m .onnx)
  echo "== $name"
  timeout 300 $B/spire run $m --inputs .gpu/models/$name.in.safetensors --outputs /tmp/$name.out.safetensors --device all 2>&1 | tail -6
done
