"""compare_outputs.py A.safetensors B.safetensors REL: every tensor of B is in A with the same shape, and
max|A - B| <= REL * max|B| (exit 1 otherwise). Prints the relative difference of each."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "gpu"))
from safetensors_io import read_safetensors  # noqa: E402

a, b, rel = read_safetensors(sys.argv[1]), read_safetensors(sys.argv[2]), float(sys.argv[3])
ok = True
for name, ref in b.items():
    got = a.get(name)
    if got is None or got.shape != ref.shape:
        print(f"{name}: missing or shape {None if got is None else got.shape} != {ref.shape}")
        ok = False
        continue
    d = float(np.max(np.abs(got.astype(np.float64) - ref))) / max(float(np.max(np.abs(ref))), 1e-30)
    good = d <= rel and np.all(np.isfinite(got))
    print(f"{name}: relative difference {d:.3e} ({'ok' if good else 'FAIL'}, limit {rel:g})")
    ok = ok and good
sys.exit(0 if ok else 1)
