"""PyTorch's numbers for the foundation benchmark on the same GPU: device-to-device copy and ReLU over the
same bytes, timed with CUDA events (median of many runs after warm-up). Prints one table row each."""
import sys
import torch

from torch_timing import median_ms

mib = int(sys.argv[1]) if len(sys.argv) > 1 else 256
n = (mib << 20) // 4
x = torch.randn(n, device="cuda")
y = torch.empty_like(x)
bytes_moved = 2 * n * 4
copy_ms = median_ms(lambda: y.copy_(x), warmup=5)
relu_ms = median_ms(lambda: torch.relu(x), warmup=5)
print(f"torch     {mib:>7} {bytes_moved / copy_ms / 1e6:>11.1f} {bytes_moved / relu_ms / 1e6:>11.1f} "
      f"{100 * copy_ms / relu_ms:>9.1f}%   {torch.cuda.get_device_name()} (torch {torch.__version__})")
