"""Inputs of tuning_table.py's resnet18 runs: torchvision's resnet18 exported to ONNX with random weights
(benchmarks/torch_models.py --export-only, as run-models.sh exports it) and one random batch of 1 and of 64
images (fixed seeds).

usage: tuning_inputs.py OUT_DIR"""
import os
import subprocess
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from safetensors_io import write_safetensors  # noqa: E402

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
if not os.path.exists(os.path.join(out, "resnet18.onnx")):
    subprocess.run([sys.executable, os.path.join(here, "..", "..", "benchmarks", "torch_models.py"), out, "--export-only",
                    "resnet18"], check=True)
for batch in (1, 64):
    x = np.random.default_rng(batch).standard_normal((batch, 3, 224, 224)).astype(np.float32)
    write_safetensors(os.path.join(out, f"resnet18.b{batch}.in.safetensors"), {"x": x})
