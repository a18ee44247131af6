"""Whole-model inference next to PyTorch on the same GPU, for the ONNX issue's table: exports torchvision's
resnet18 and nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256, batch_first=True) to ONNX
(random weights from a fixed seed, a dynamic batch; nothing downloaded), writes batch-1 and batch-64 inputs and
PyTorch's float32 outputs as safetensors, and times PyTorch eager and torch.compile (default mode) with CUDA
events (median of many runs after warm-up).

usage: torch_models.py OUT_DIR        then spire run each OUT_DIR/NAME.onnx on NAME.bB.in.safetensors
Prints one line per (model, batch): 'torch NAME bB eager_ms compile_ms'.
"""
import os
import sys

import numpy as np
import torch

from torch_timing import median_ms

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "gpu"))
from safetensors_io import write_safetensors  # noqa: E402
import torchvision

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
DEV = "cuda" if torch.cuda.is_available() else "cpu"


def export(name, model, example, opset):
    kwargs = {}
    try:  # torch >= 2.5 picks its dynamo exporter by default; the TorchScript one is what Debian's 1.13 has
        import inspect
        if "dynamo" in inspect.signature(torch.onnx.export).parameters:
            kwargs["dynamo"] = False
    except (TypeError, ValueError):
        pass
    torch.onnx.export(model, (example,), os.path.join(OUT, name + ".onnx"), opset_version=opset,
                      input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
                      **kwargs)


def run(name, model, shape_of_batch, opset=13):
    torch.manual_seed(0)
    model = model.eval()
    export(name, model, torch.randn(*shape_of_batch(1)), opset)
    model = model.to(DEV)
    compiled = torch.compile(model) if DEV == "cuda" else None
    for batch in (1, 64):
        g = torch.Generator().manual_seed(batch)
        x = torch.randn(*shape_of_batch(batch), generator=g)
        with torch.no_grad():
            y = model(x.to(DEV)).float().cpu()
        write_safetensors(os.path.join(OUT, f"{name}.b{batch}.in.safetensors"), {"x": x.numpy().astype(np.float32)})
        write_safetensors(os.path.join(OUT, f"{name}.b{batch}.torch.safetensors"), {"y": y.numpy().astype(np.float32)})
        if DEV != "cuda":
            continue
        xd = x.to(DEV)
        with torch.no_grad():
            eager = median_ms(lambda: model(xd))
            compiled(xd)  # compile outside the timing
            comp = median_ms(lambda: compiled(xd))
        print(f"torch {name} b{batch} {eager:.4f} {comp:.4f}", flush=True)


run("resnet18", torchvision.models.resnet18(), lambda b: (b, 3, 224, 224))
layer = torch.nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256, batch_first=True)
run("encoder_op13", layer, lambda b: (b, 64, 128), opset=13)
run("encoder_op17", torch.nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256, batch_first=True),
    lambda b: (b, 64, 128), opset=17)
