"""Safetensors files of the GPU runs compared with numpy (through safetensors_io: no safetensors package needed).

  check_outputs.py feed WEIGHTS INPUTS OUT   writes the imported encoder layer's gradient-check feed (prepare.sh
                                             ONNX=1): its weights and inputs plus a fixed random loss_weight shaped
                                             like its input x
  check_outputs.py grads REF GOT...          each GOT's parameter gradients (grad.*) against the float64 REF: the
                                             worst max-norm relative error, max |g - r| / max |r| per tensor
  check_outputs.py maxnorm REF GOT           every tensor of REF against GOT's: max |g - r| / max(1, max |r|)
"""
import sys

import numpy as np

from safetensors_io import read_safetensors, write_safetensors


def feed(weights, inputs, out):
    tensors = dict(read_safetensors(weights))
    tensors.update(read_safetensors(inputs))
    tensors["loss_weight"] = np.random.default_rng(7).uniform(-1, 1, tensors["x"].shape).astype(np.float32)
    write_safetensors(out, tensors)


def grads(ref_path, *paths):
    ref = read_safetensors(ref_path)
    for path in paths:
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


def maxnorm(ref_path, got_path):
    ref, got = read_safetensors(ref_path), read_safetensors(got_path)
    for k in sorted(ref):
        r = ref[k].astype(np.float64)
        g = got[k].astype(np.float64)
        print(f"{k:28s} max-norm error {np.abs(g - r).max() / max(1.0, np.abs(r).max()):.2e}")


if __name__ == "__main__":
    commands = {"feed": feed, "grads": grads, "maxnorm": maxnorm}
    if len(sys.argv) < 3 or sys.argv[1] not in commands:
        sys.exit(__doc__)
    commands[sys.argv[1]](*sys.argv[2:])
