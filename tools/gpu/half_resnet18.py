"""resnet18 in float16, as `model.half()` users run it: exports torchvision's resnet18 (random weights, seed 0,
batch-norm folded into the convolutions by the exporter) from CUDA in float16 to OUT/resnet18_f16.onnx with a
dynamic batch, writes batch-1 and batch-64 inputs and PyTorch's float16 outputs (as float32) as safetensors, and
times PyTorch eager and torch.compile in float16 (CUDA events, median after warm-up).
Prints one line per batch: 'torch resnet18_f16 bB eager_ms eager_ms compile_ms' (models_table.py's format; the
second column repeats eager, there being no TF32 variant of a half model).
usage: half_resnet18.py OUT_DIR"""
import inspect
import os
import sys

import numpy as np
import torch
import torchvision

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))
from torch_timing import median_ms  # noqa: E402
from safetensors_io import write_safetensors  # noqa: E402

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)
model = torchvision.models.resnet18().eval().half().cuda()
kwargs = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
torch.onnx.export(model, (torch.randn(1, 3, 224, 224).half().cuda(),), os.path.join(out, "resnet18_f16.onnx"),
                  opset_version=17, input_names=["x"], output_names=["y"],
                  dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, **kwargs)
compiled = torch.compile(model)
for batch in (1, 64):
    x = torch.randn(batch, 3, 224, 224, generator=torch.Generator().manual_seed(batch)).half()
    xd = x.cuda()
    with torch.no_grad():
        y = model(xd).float().cpu()
        write_safetensors(os.path.join(out, f"resnet18_f16.b{batch}.in.safetensors"), {"x": x.numpy()})
        write_safetensors(os.path.join(out, f"resnet18_f16.b{batch}.torch.safetensors"), {"y": y.numpy().astype(np.float32)})
        eager = median_ms(lambda: model(xd))
        compiled(xd)
        comp = median_ms(lambda: compiled(xd))
    print(f"torch resnet18_f16 b{batch} {eager:.4f} {eager:.4f} {comp:.4f}", flush=True)
