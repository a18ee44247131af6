"""The first step of a fresh process: a convolution's weight gradient, computed in the process's first backward, equals
eager's. On an H200 with CUDA's programmatic dependent launch (on by default) it once came out NaN there in every fresh
process (runtime/cuda/cuda_command_stream.cpp), while later steps, whose memory still held the same values from
before, hid the race. Each case runs in its own process, so nothing warm (kernels, memory) carries over."""
import os
import subprocess
import sys

CHILD = r"""
import sys, torch, torch.nn as nn
import spire.torch
device = sys.argv[1]
on_cuda = device.startswith("cuda")
# resnet18's stem convolution; at batch 32 and 224x224 on a GPU (what failed), small on a CPU device.
batch, size = (32, 224) if on_cuda else (2, 32)
where = torch.device("cuda", int(device.split(":")[1])) if on_cuda else torch.device("cpu")
torch.manual_seed(0)
conv = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False).to(where)
eager = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False).to(where)
eager.load_state_dict(conv.state_dict())
if on_cuda:
    torch.backends.cudnn.allow_tf32 = False
x = torch.randn(batch, 3, size, size, device=where)
compiled = spire.torch.compile(nn.Sequential(conv), device=device)
y = compiled(x)
g = torch.randn_like(y)
y.backward(g)
eager(x).backward(g)
got, want = conv.weight.grad, eager.weight.grad
finite = bool(torch.isfinite(got).all())
err = float((got - want).norm() / want.norm()) if finite else float("nan")
print(f"finite {finite} err {err:.3e}")
"""


def test_a_fresh_process_first_weight_gradient_equals_eager(device):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    for run in range(2):
        out = subprocess.run([sys.executable, "-c", CHILD, device], env=env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        last = out.stdout.strip().splitlines()[-1]
        finite, err = last.split()[1] == "True", float(last.split()[3])
        assert finite, f"process {run}: non-finite weight gradient on {device}"
        assert err <= 1e-4, f"process {run}: weight gradient {err:.2e} from eager's on {device}"
