"""Every gradient (grad.*) of each device's file against the float64 reference file: the worst max-norm relative
error (max |d - r| / max |r| per tensor). usage: compare_grads.py REF DEVICE_FILE..."""
import sys

import numpy as np

from safetensors_io import read_safetensors

ref = read_safetensors(sys.argv[1])
for path in sys.argv[2:]:
    got = read_safetensors(path)
    worst, name, count = 0.0, "", 0
    for n, r in ref.items():
        if not n.startswith("grad."):
            continue
        count += 1
        d = got[n].astype(np.float64)
        err = float(np.abs(d - r).max() / max(np.abs(r).max(), 1e-30)) if np.isfinite(d).all() else float("inf")
        if err > worst:
            worst, name = err, n
    print(f"{path}: {count} parameter gradients, worst max-norm relative error {worst:.3e} ({name})")
