"""Where the host time of a torch.compile(backend="spire") call goes (run after run-torch.sh built the module there:
PYTHONPATH=build-torch/python python3 tools/gpu/torch_call_profile.py). Per model at batch 1 on each device: the wall
time of a call, the device time of its plans (last_step_ms), and cProfile's top functions over 50 calls."""
import cProfile
import io
import os
import pstats
import statistics
import time

import torch
import torchvision

import spire.torch  # registers the backend
from spire.torch.dynamo_backend import compiled_pieces, pieces_made

torch.backends.cudnn.allow_tf32 = False
dev = torch.device("cuda:0")
for name, device in [(n, d) for n in os.environ.get("MODELS", "resnet18,mobilenet_v2").split(",")
                     for d in os.environ.get("DEVICES", "cuda:0,vulkan:0").split(",")]:
    torch.manual_seed(0)
    m = getattr(torchvision.models, name)().eval().to(dev)
    x = torch.randn(1, 3, 224, 224, device=dev)
    torch._dynamo.reset()
    before = pieces_made()
    fn = torch.compile(m, backend="spire", options={"device": device}, dynamic=False)
    with torch.no_grad():
        for _ in range(5):
            fn(x)
        torch.cuda.synchronize()
        walls = []
        for _ in range(50):
            t = time.perf_counter()
            fn(x)
            torch.cuda.synchronize()
            walls.append((time.perf_counter() - t) * 1e3)
        pieces = compiled_pieces(since=before)
        plans = [p for piece in pieces for part in piece._partitions.values() for r in part.runners.values()
                 for p in set(r.plans.values())]
        device_ms = sum(p.exe.last_step_ms() for p in plans)
        uploads = sum(p.exe.parameter_uploads for p in plans)
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(50):
            fn(x)
        torch.cuda.synchronize()
        pr.disable()
    s = io.StringIO()
    st = pstats.Stats(pr, stream=s)
    st.sort_stats("tottime").print_stats(18)
    st.sort_stats("cumtime").print_stats(22)
    print(f"== {name} batch 1 on {device}: wall {statistics.median(walls):.3f} ms, device {device_ms:.3f} ms, "
          f"{len(pieces)} pieces, {len(plans)} plans, parameter uploads so far {uploads}")
    print("\n".join(line for line in s.getvalue().splitlines() if line.strip() and "Ordered by" not in line)[:7000])
