#!/usr/bin/env bash
# Packs what tools/gpu/run-custom-ops.sh needs into .gpu/ (ignored by git; carried with .gl/): the CLI built here
# (stripped), Fashion-MNIST, and random inputs for examples/custom_ops/silu_mlp.graph's training step.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
cmake --build build -j2 --target spire
rm -rf .gpu && mkdir -p .gpu/bin .gpu/data
cp build/bin/spire .gpu/bin/ && strip .gpu/bin/spire
cp /usr/share/datasets/fashion-mnist/*.gz .gpu/data/
/usr/bin/python3 - <<'PY'
import sys; sys.path.insert(0, "tools/gpu")
import numpy as np
from safetensors_io import write_safetensors
r = np.random.default_rng(5)
u = lambda *s, k=1.0: (r.uniform(-k, k, s)).astype(np.float32)
write_safetensors(".gpu/mlp_in.safetensors", {"x": u(8, 128, k=2), "linear1.weight": u(64, 128, k=0.2), "linear1.bias": u(64, k=0.2),
                  "linear2.weight": u(128, 64, k=0.2), "linear2.bias": u(128, k=0.2)})
PY
du -sh .gpu .gl
