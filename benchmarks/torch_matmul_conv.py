"""PyTorch's side of spire_bench_matmul and spire_bench_conv2d: the same matmul shapes and the same resnet18
convolutions (forward, input gradient, weight gradient) on the same GPU, timed with CUDA events
(torch_timing.median_ms). Strict float32 (TF32 off for matmul and cuDNN), as spire computes; a second column
times PyTorch's TF32 path, which is faster but rounds inputs to 10-bit mantissas, so it is not the same
arithmetic. Matmuls also run in bf16 (cuBLAS's tensor cores, f32 accumulation), the yardstick of
spire_bench_matmul --dtype bf16. Gradients go through aten.convolution_backward, what autograd calls for conv2d.
Each time spans one eager call between two CUDA events, so for ops of a few tens of microseconds it includes
the host's launch cost (the GPU waits for the launch), while spire's times are device time inside a recorded
stream: read small rows (resnet18's fc at batch 1, say) with that in mind.

usage: torch_matmul_conv.py [--out DIR] [--runs 50] [--small] [--cpu-check] [--matmul-only] [--half-conv]
  --out DIR     also write DIR/torch_matmul.csv and DIR/torch_conv2d.csv (tools/gpu/speed_table.py joins them
                with spire's CSVs)
  --small       the benchmarks' tiny sizes (every matmul dimension / 16; batch 1, conv1 and layer2 only)
  --cpu-check   no GPU: run the small sizes on the CPU with a wall-clock timer, to check the script itself
  --matmul-only the matmul table alone
  --half-conv   instead of both tables, the convolutions' forward passes in f16 and bf16 (NCHW, cuDNN's tensor
                cores, f32 accumulation): the yardstick of spire_bench_conv2d --dtype f16|bf16; writes
                DIR/torch_conv2d_half.csv
The shapes and layer names must stay those of benchmarks/bench_matmul.cpp and bench_conv2d.cpp.
"""
import argparse
import csv
import os
import statistics
import time

import torch

from torch_timing import median_ms

MATMUL_CASES = [  # (model, M, K, N), as bench_matmul.cpp's default_cases()
    ("square", 1024, 1024, 1024),
    ("square", 2048, 2048, 2048),
    ("square", 4096, 4096, 4096),
    ("square", 8192, 8192, 8192),
    ("resnet18 fc b1", 1, 512, 1000),
    ("resnet18 fc b64", 64, 512, 1000),
    ("d768 qkv proj", 512, 768, 2304),
    ("d768 attn out", 512, 768, 768),
    ("d768 mlp up", 512, 768, 3072),
    ("d768 mlp down", 512, 3072, 768),
]

CONV_LAYERS = [  # (name, cin, cout, k, stride, pad, in_hw), as bench_conv2d.cpp's resnet18_layers()
    ("conv1", 3, 64, 7, 2, 3, 224),
    ("layer1.0.conv1", 64, 64, 3, 1, 1, 56),
    ("layer2.0.conv1", 64, 128, 3, 2, 1, 56),
    ("layer2.0.conv2", 128, 128, 3, 1, 1, 28),
    ("layer2.0.downsample", 64, 128, 1, 2, 0, 56),
    ("layer3.0.conv1", 128, 256, 3, 2, 1, 28),
    ("layer3.0.conv2", 256, 256, 3, 1, 1, 14),
    ("layer3.0.downsample", 128, 256, 1, 2, 0, 28),
    ("layer4.0.conv1", 256, 512, 3, 2, 1, 14),
    ("layer4.0.conv2", 512, 512, 3, 1, 1, 7),
    ("layer4.0.downsample", 256, 512, 1, 2, 0, 14),
]
SMALL_LAYERS = ["conv1", "layer2.0.conv1", "layer2.0.conv2", "layer2.0.downsample"]


def geometry(cin, cout, k, stride, in_hw):
    return f"{k}x{k}{'/' + str(stride) if stride > 1 else ''} {cin}->{cout} @{in_hw}"


def set_tf32(on):
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on


def wall_median_ms(fn, runs, warmup=2):
    """The CPU check's timer: no CUDA events there."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def timed(fn, runs, cuda):
    """(strict fp32 ms, TF32 ms or None)."""
    if not cuda:
        return wall_median_ms(fn, runs), None
    set_tf32(False)
    strict = median_ms(fn, runs=runs)
    set_tf32(True)
    tf32 = median_ms(fn, runs=runs)
    set_tf32(False)
    return strict, tf32


def tflops(flops, ms):
    return flops / (ms * 1e-3) / 1e12 if ms else float("nan")


def cell(v, width, spec):
    return format("n/a" if v is None else format(v, spec), f">{width}")


def matmul_rows(args, dev, cuda):
    g = torch.Generator().manual_seed(0)
    rows = []
    print(f"{'shape MxKxN':<16}  {'model':<16}  {'fp32 ms':>9}  {'TFLOP/s':>8}  {'TF32 ms':>9}  {'TFLOP/s':>8}  "
          f"{'bf16 ms':>9}  {'TFLOP/s':>8}")
    for model, m, k, n in MATMUL_CASES:
        if args.small:
            m, k, n = max(1, m // 16), max(1, k // 16), max(1, n // 16)
        a = (torch.rand(m, k, generator=g) * 2 - 1).to(dev)
        b = (torch.rand(k, n, generator=g) * 2 - 1).to(dev)
        ms, ms_tf32 = timed(lambda: torch.mm(a, b), args.runs, cuda)
        # bf16 through cuBLAS's tensor-core kernels (f32 accumulation): what spire_bench_matmul --dtype bf16
        # is measured against.
        ab, bb = a.to(torch.bfloat16), b.to(torch.bfloat16)
        ms_bf16 = median_ms(lambda: torch.mm(ab, bb), runs=args.runs) if cuda else None
        flops = 2.0 * m * k * n
        shape = f"{m}x{k}x{n}"
        row = {"shape": shape, "model": model, "ms": ms, "tflops": tflops(flops, ms),
               "ms_tf32": ms_tf32, "tflops_tf32": tflops(flops, ms_tf32) if ms_tf32 else None,
               "ms_bf16": ms_bf16, "tflops_bf16": tflops(flops, ms_bf16) if ms_bf16 else None}
        rows.append(row)
        print(f"{shape:<16}  {model:<16}  {ms:>9.4f}  {row['tflops']:>8.3g}  {cell(ms_tf32, 9, '.4f')}  "
              f"{cell(row['tflops_tf32'], 8, '.3g')}  {cell(ms_bf16, 9, '.4f')}  {cell(row['tflops_bf16'], 8, '.3g')}",
              flush=True)
    return rows


def conv_rows(args, dev, cuda):
    g = torch.Generator().manual_seed(0)
    rows = []
    print(f"{'layer':<19}  {'geometry':<19}  {'batch':>5}  {'pass':<5}  {'fp32 ms':>9}  {'TFLOP/s':>8}  "
          f"{'TF32 ms':>9}  {'TFLOP/s':>8}")
    batches = [1] if args.small else [1, 64]
    for name, cin, cout, k, stride, pad, hw in CONV_LAYERS:
        if args.small and name not in SMALL_LAYERS:
            continue
        out_hw = (hw + 2 * pad - k) // stride + 1
        for n in batches:
            x = (torch.rand(n, cin, hw, hw, generator=g) * 2 - 1).to(dev)
            w = (torch.rand(cout, cin, k, k, generator=g) * 2 - 1).to(dev)
            gy = (torch.rand(n, cout, out_hw, out_hw, generator=g) * 2 - 1).to(dev)
            conv_args = ([stride, stride], [pad, pad], [1, 1], False, [0, 0], 1)
            passes = {
                "fwd": lambda: torch.nn.functional.conv2d(x, w, stride=stride, padding=pad),
                "dgrad": lambda: torch.ops.aten.convolution_backward(gy, x, w, None, *conv_args, [True, False, False]),
                "wgrad": lambda: torch.ops.aten.convolution_backward(gy, x, w, None, *conv_args, [False, True, False]),
            }
            flops = 2.0 * n * cout * out_hw * out_hw * cin * k * k  # every pass: the forward's multiply-adds
            for pass_name, fn in passes.items():
                ms, ms_tf32 = timed(fn, args.runs, cuda)
                geo = geometry(cin, cout, k, stride, hw)
                row = {"layer": name, "geometry": geo, "batch": n, "pass": pass_name, "ms": ms,
                       "tflops": tflops(flops, ms), "ms_tf32": ms_tf32,
                       "tflops_tf32": tflops(flops, ms_tf32) if ms_tf32 else None}
                rows.append(row)
                print(f"{name:<19}  {geo:<19}  {n:>5}  {pass_name:<5}  {ms:>9.4f}  {row['tflops']:>8.3g}  "
                      f"{cell(ms_tf32, 9, '.4f')}  {cell(row['tflops_tf32'], 8, '.3g')}", flush=True)
    return rows


def half_conv_rows(args, dev):
    """Forward passes in f16 and bf16: one row per (layer, batch) with both times."""
    g = torch.Generator().manual_seed(0)
    rows = []
    print(f"{'layer':<19}  {'geometry':<19}  {'batch':>5}  {'f16 ms':>9}  {'TFLOP/s':>8}  {'bf16 ms':>9}  {'TFLOP/s':>8}")
    for name, cin, cout, k, stride, pad, hw in CONV_LAYERS:
        out_hw = (hw + 2 * pad - k) // stride + 1
        for n in [1, 64]:
            x = (torch.rand(n, cin, hw, hw, generator=g) * 2 - 1).to(dev)
            w = (torch.rand(cout, cin, k, k, generator=g) * 2 - 1).to(dev)
            flops = 2.0 * n * cout * out_hw * out_hw * cin * k * k
            row = {"layer": name, "geometry": geometry(cin, cout, k, stride, hw), "batch": n, "pass": "fwd"}
            for label, dtype in (("f16", torch.float16), ("bf16", torch.bfloat16)):
                xh, wh = x.to(dtype), w.to(dtype)
                ms = median_ms(lambda: torch.nn.functional.conv2d(xh, wh, stride=stride, padding=pad), runs=args.runs)
                row[f"ms_{label}"], row[f"tflops_{label}"] = ms, tflops(flops, ms)
            rows.append(row)
            print(f"{name:<19}  {row['geometry']:<19}  {n:>5}  {row['ms_f16']:>9.4f}  {row['tflops_f16']:>8.3g}  "
                  f"{row['ms_bf16']:>9.4f}  {row['tflops_bf16']:>8.3g}", flush=True)
    return rows


def write_csv(path, rows, device, device_name):
    with open(path, "w", newline="") as f:
        fields = ["device", "device_name"] + list(rows[0].keys())
        out = csv.DictWriter(f, fieldnames=fields)
        out.writeheader()
        for r in rows:
            out.writerow({"device": device, "device_name": device_name,
                          **{k: ("" if v is None else f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()}})


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out")
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--small", action="store_true")
    p.add_argument("--cpu-check", action="store_true")
    p.add_argument("--matmul-only", action="store_true")
    p.add_argument("--half-conv", action="store_true")
    args = p.parse_args()
    cuda = not args.cpu_check
    if cuda and not torch.cuda.is_available():
        raise SystemExit("torch_matmul_conv.py: no CUDA device (use --cpu-check to check the script on the CPU)")
    if args.cpu_check:
        args.small = True
        args.runs = min(args.runs, 3)
    dev = "cuda" if cuda else "cpu"
    device = "cuda:0" if cuda else "cpu"
    device_name = f"PyTorch {torch.__version__} on " + (torch.cuda.get_device_name(0) if cuda else "the CPU")
    set_tf32(False)
    print(f"{device_name}: strict fp32 (TF32 off) and TF32, median of {args.runs} runs"
          + (" (CUDA events)" if cuda else " (wall clock)"))
    if args.half_conv:
        if not cuda:
            raise SystemExit("torch_matmul_conv.py: --half-conv needs a CUDA device")
        print("\nresnet18 convolutions in f16 and bf16, forward (conv2d)")
        half = half_conv_rows(args, dev)
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            write_csv(os.path.join(args.out, "torch_conv2d_half.csv"), half, device, device_name)
        return
    print("\nmatmul (torch.mm)")
    mm = matmul_rows(args, dev, cuda)
    conv = None
    if not args.matmul_only:
        print("\nresnet18 convolutions (conv2d; aten.convolution_backward for the gradients)")
        conv = conv_rows(args, dev, cuda)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        write_csv(os.path.join(args.out, "torch_matmul.csv"), mm, device, device_name)
        if conv:
            write_csv(os.path.join(args.out, "torch_conv2d.csv"), conv, device, device_name)


if __name__ == "__main__":
    main()
