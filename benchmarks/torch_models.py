"""Whole-model inference next to PyTorch on the same GPU, for the ONNX issue's table: exports torchvision's
resnet18 and nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256, batch_first=True) to ONNX
(random weights from a fixed seed, a dynamic batch; nothing downloaded), writes batch-1 and batch-64 inputs and
PyTorch's float32 outputs as safetensors, and times PyTorch eager and torch.compile (default mode) with CUDA
events (median of many runs after warm-up).

usage: torch_models.py OUT_DIR [--export-only NAME...]
  then spire run each OUT_DIR/NAME.onnx on NAME.bB.in.safetensors.
A model whose NAME.onnx and NAME.state.safetensors are already in OUT_DIR is not exported again: its weights
are loaded from the state file (how the encoder layers, which torch 2.11's TorchScript exporter cannot trace,
are exported with Debian's torch 1.13 on the development machine and carried). PyTorch's reference outputs are
computed in strict float32 (TF32 off, as spire computes); the timings are eager in strict float32, eager with
PyTorch's defaults (TF32 convolutions) and torch.compile with its defaults.
Prints one line per (model, batch): 'torch NAME bB eager_fp32_ms eager_default_ms compile_ms'.
"""
import os
import sys

import numpy as np
import torch

from torch_timing import median_ms

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "gpu"))
from safetensors_io import read_safetensors, write_safetensors  # noqa: E402
import torchvision

OUT = sys.argv[1]
EXPORT_ONLY = sys.argv[sys.argv.index("--export-only") + 1:] if "--export-only" in sys.argv else None
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


def strict_fp32(on):
    torch.backends.cudnn.allow_tf32 = not on
    torch.backends.cuda.matmul.allow_tf32 = not on


def run(name, model, shape_of_batch, opset=13):
    if EXPORT_ONLY is not None and name not in EXPORT_ONLY:
        return
    model = model.eval()
    onnx_path, state_path = os.path.join(OUT, name + ".onnx"), os.path.join(OUT, name + ".state.safetensors")
    if os.path.exists(onnx_path) and os.path.exists(state_path):
        model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in read_safetensors(state_path).items()})
    else:
        export(name, model, torch.randn(*shape_of_batch(1)), opset)
        write_safetensors(state_path, {k: v.numpy() for k, v in model.state_dict().items()})
    if EXPORT_ONLY is not None:
        return
    model = model.to(DEV)
    compiled = torch.compile(model) if DEV == "cuda" else None
    for batch in (1, 64):
        g = torch.Generator().manual_seed(batch)
        x = torch.randn(*shape_of_batch(batch), generator=g)
        strict_fp32(True)
        with torch.no_grad():
            y = model(x.to(DEV)).float().cpu()
        write_safetensors(os.path.join(OUT, f"{name}.b{batch}.in.safetensors"), {"x": x.numpy().astype(np.float32)})
        write_safetensors(os.path.join(OUT, f"{name}.b{batch}.torch.safetensors"), {"y": y.numpy().astype(np.float32)})
        if DEV != "cuda":
            continue
        xd = x.to(DEV)
        with torch.no_grad():
            eager_fp32 = median_ms(lambda: model(xd))
            strict_fp32(False)
            eager = median_ms(lambda: model(xd))
            compiled(xd)  # compile outside the timing
            comp = median_ms(lambda: compiled(xd))
        print(f"torch {name} b{batch} {eager_fp32:.4f} {eager:.4f} {comp:.4f}", flush=True)


torch.manual_seed(0)
run("resnet18", torchvision.models.resnet18(), lambda b: (b, 3, 224, 224))
for opset in (13, 17):
    torch.manual_seed(0)
    run(f"encoder_op{opset}", torch.nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256, batch_first=True),
        lambda b: (b, 64, 128), opset=opset)
