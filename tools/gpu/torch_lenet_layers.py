# LeNet's heaviest products at batch 8192 in PyTorch fp32 (cuBLAS and cuDNN, TF32 off, as spire computes them) on the
# lent GPU: each one alone, CUDA events, median of 50 after 10 warm-up runs, in ms. What spire's kernels of the same
# shapes could reach (docs/PERFORMANCE.md compares them with spire's profile of the step).
import statistics
import sys

import torch
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = True
dev = "cuda"
n = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
g = torch.Generator(device=dev).manual_seed(0)


def rand(*shape):
    return torch.randn(*shape, device=dev, generator=g)


def ms(fn):
    for _ in range(10):
        fn()
    times = []
    for _ in range(50):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


x1, w1 = rand(n, 1, 28, 28), rand(6, 1, 5, 5)
x2, w2 = rand(n, 6, 14, 14), rand(16, 6, 5, 5)
gy1, gy2 = rand(n, 6, 28, 28), rand(n, 16, 14, 14)
xf, wf, gf = rand(n, 784), rand(120, 784), rand(n, 120)
rows = [
    ("conv1 forward (1 -> 6, 28x28, 5x5 pad 2)", 2 * n * 6 * 784 * 25, lambda: F.conv2d(x1, w1, padding=2)),
    ("conv1 weight gradient", 2 * n * 6 * 784 * 25, lambda: torch.nn.grad.conv2d_weight(x1, w1.shape, gy1, padding=2)),
    ("conv2 forward (6 -> 16, 14x14, 5x5 pad 2)", 2 * n * 16 * 196 * 150, lambda: F.conv2d(x2, w2, padding=2)),
    ("conv2 input gradient", 2 * n * 16 * 196 * 150, lambda: torch.nn.grad.conv2d_input(x2.shape, w2, gy2, padding=2)),
    ("conv2 weight gradient", 2 * n * 16 * 196 * 150, lambda: torch.nn.grad.conv2d_weight(x2, w2.shape, gy2, padding=2)),
    ("fc1 forward (m8192 k784 n120)", 2 * n * 784 * 120, lambda: F.linear(xf, wf)),
    ("fc1 input gradient (m8192 k120 n784)", 2 * n * 784 * 120, lambda: gf @ wf),
    ("fc1 weight gradient (m120 k8192 n784)", 2 * n * 784 * 120, lambda: gf.t() @ xf),
    ("fc1 bias gradient (sum over 8192 rows)", n * 120, lambda: gf.sum(0)),
    ("conv2 bias gradient (sum of 8192x16x14x14)", n * 16 * 196, lambda: gy2.sum((0, 2, 3))),
]
print(f"# PyTorch {torch.__version__}, {torch.cuda.get_device_name()}, fp32 (TF32 off), batch {n}")
print(f"{'op':48s} {'ms':>8s} {'TFLOP/s':>8s}")
for name, flops, fn in rows:
    t = ms(fn)
    print(f"{name:48s} {t:8.4f} {flops / t / 1e9:8.2f}")
