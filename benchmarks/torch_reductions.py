"""Reductions and softmax rows, the workloads of issue 10's subgroup item: writes each as a graph text file with its
input (safetensors) into DIR for `spire run --bench`, and, where CUDA is present, prints PyTorch's time for the
same op on the same GPU (CUDA events, median of 50 runs after warm-up) and the GB/s of its minimum traffic.

    /usr/bin/python3 benchmarks/torch_reductions.py DIR [--export-only]
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools", "gpu"))
from safetensors_io import write_safetensors  # noqa: E402

# name, input shape, graph op line (x -> y), output shape, torch function
WORKLOADS = [
    ("softmax_attention_49152x512", (49152, 512), "softmax(x) {axis=1}", (49152, 512), lambda t: t.softmax(1)),
    ("log_softmax_classes_8192x1000", (8192, 1000), "log_softmax(x) {axis=1}", (8192, 1000), lambda t: t.log_softmax(1)),
    ("sum_rows_4096x4096", (4096, 4096), "sum(x) {axes=[1], keepdim=false}", (4096,), lambda t: t.sum(1)),
    ("max_rows_4096x4096", (4096, 4096), "max(x) {axes=[1], keepdim=false}", (4096,), lambda t: t.amax(1)),
    ("mean_all_16777216", (16777216,), "mean(x) {axes=[0], keepdim=false}", (), lambda t: t.mean()),
]


def dims(shape):
    return "[" + ",".join(str(d) for d in shape) + "]"


def export(folder):
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(7)
    for name, shape, op, out_shape, _ in WORKLOADS:
        with open(os.path.join(folder, name + ".graph"), "w") as f:
            f.write(f"x = input() : f32{dims(shape)}\ny = {op} : f32{dims(out_shape)}\noutput y = y\n")
        write_safetensors(os.path.join(folder, name + ".inputs.safetensors"),
                          {"x": rng.uniform(-4, 4, size=shape).astype(np.float32)})


def main():
    folder = sys.argv[1]
    export(folder)
    if "--export-only" in sys.argv[2:]:
        return
    import torch
    from torch_timing import median_ms
    if not torch.cuda.is_available():
        print("no CUDA device: graphs written, nothing timed")
        return
    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name()}")
    print(f"{'workload':32} {'torch ms':>9} {'GB/s':>7}")
    for name, shape, _, out_shape, fn in WORKLOADS:
        x = torch.empty(shape, device="cuda").uniform_(-4, 4)
        ms = median_ms(lambda: fn(x))
        moved = 4 * (np.prod(shape) + max(1, int(np.prod(out_shape))))
        print(f"{name:32} {ms:9.4f} {moved / ms / 1e6:7.0f}")


if __name__ == "__main__":
    main()
