"""The whole-model table: for each exported model and batch, spire's median device time on cuda:0 and vulkan:0
(`spire run --bench`), PyTorch eager (strict float32 and default TF32) and torch.compile times from
torch_models.py's lines, the ratio to strict-float32 eager,
and spire's relative L2 error against PyTorch's output and ONNX Runtime's (CPU provider, a second reference).
usage: models_table.py SPIRE MODELS_DIR TORCH_LINES
SPIRE_RUN_ARGS (environment) adds arguments to every `spire run`, e.g. "--tune --tuning-cache /tmp/tc.txt"."""
import os
import re
import subprocess
import sys

import numpy as np

from safetensors_io import read_safetensors

spire, models, torch_lines = sys.argv[1:4]
torch_ms = {}
for line in open(torch_lines):
    p = line.split()
    if len(p) == 6 and p[0] == "torch":
        torch_ms[(p[1], p[2])] = (float(p[3]), float(p[4]), float(p[5]))

try:
    import onnxruntime as ort
except ImportError:
    ort = None


def rel_l2(a, b):
    return float(np.linalg.norm(a.astype(np.float64) - b) / np.linalg.norm(b.astype(np.float64)))


print(f"{'model':<14} {'batch':>5} {'device':<9} {'spire ms':>9} {'eager fp32':>10} {'eager dflt':>10} "
      f"{'compile':>8} {'spire/eager fp32':>16} {'err vs torch':>12} {'err vs ORT':>10}")
for (name, batch), (eager, eager_default, compiled) in torch_ms.items():
    onnx_path = f"{models}/{name}.onnx"
    inp = f"{models}/{name}.{batch}.in.safetensors"
    want = read_safetensors(f"{models}/{name}.{batch}.torch.safetensors")["y"]
    ort_y = None
    if ort is not None:
        try:  # ONNX Runtime's CPU provider lacks some kernels (float16 convolutions in some versions)
            sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
            ort_y = sess.run(None, {"x": read_safetensors(inp)["x"]})[0]
        except Exception as e:  # noqa: BLE001
            print(f"(ONNX Runtime could not run {name}: {str(e).splitlines()[0][:120]})")
    for dev in ("cuda:0", "vulkan:0"):
        out = f"/tmp/{name}.{batch}.{dev.replace(':', '')}.safetensors"
        r = subprocess.run([spire, "run", onnx_path, "--inputs", inp, "--outputs", out, "--device", dev,
                            "--bench", "50"] + os.environ.get("SPIRE_RUN_ARGS", "").split(),
                           capture_output=True, text=True)
        m = re.search(rf"^{re.escape(dev)}\s+\d+\s+([0-9.]+)", r.stdout, re.M)
        if r.returncode != 0 or not m:
            print(f"{name:<14} {batch:>5} {dev:<9} FAILED: {(r.stdout + r.stderr).strip()[-300:]}")
            continue
        ms = float(m.group(1))
        got = read_safetensors(out)["y"]
        ort_err = f"{rel_l2(got, ort_y):.2e}" if ort_y is not None else "-"
        print(f"{name:<14} {batch:>5} {dev:<9} {ms:>9.3f} {eager:>10.3f} {eager_default:>10.3f} {compiled:>8.3f} "
              f"{ms / eager:>16.2f} {rel_l2(got, want):>12.2e} {ort_err:>10}", flush=True)
