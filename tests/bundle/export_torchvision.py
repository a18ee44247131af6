"""Exports a torchvision image classifier (argv[2], default resnet18; random weights, torch.manual_seed(0)) with a
dynamic batch into argv[1], with inputs and PyTorch's outputs at batches 1, 3 and 8: MODEL.onnx, in_bB.safetensors,
torch_bB.safetensors. Nothing is downloaded. Run with Debian's /usr/bin/python3 (python3-torch, python3-torchvision)."""
import inspect
import os
import sys
import warnings

import torch
import torchvision

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "gpu"))
from safetensors_io import write_safetensors  # noqa: E402

warnings.filterwarnings("ignore")
out = sys.argv[1]
name = sys.argv[2] if len(sys.argv) > 2 else "resnet18"
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)
model = getattr(torchvision.models, name)().eval()
# torch >= 2.5 picks its dynamo exporter by default (a newer ONNX IR than libonnx 1.12 reads); the TorchScript
# exporter is the one Debian's torch has.
legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
torch.onnx.export(model, (torch.randn(1, 3, 224, 224),), os.path.join(out, f"{name}.onnx"), opset_version=17,
                  input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, **legacy)
for batch in (1, 3, 8):
    torch.manual_seed(100 + batch)
    x = torch.randn(batch, 3, 224, 224)
    with torch.no_grad():
        y = model(x)
    write_safetensors(os.path.join(out, f"in_b{batch}.safetensors"), {"x": x.numpy()})
    write_safetensors(os.path.join(out, f"torch_b{batch}.safetensors"), {"y": y.numpy()})
