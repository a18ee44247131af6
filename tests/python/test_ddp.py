"""A model compiled by spire trains under DistributedDataParallel: 2 processes with gloo on the same device kind give
the losses of one process on the whole global batch (within 1e-5 relative)."""
import os
import subprocess
import sys

import torch
import torch.nn.functional as F

import spire.torch
from models import LeNet, seeded

STEPS, BATCH = 10, 16


def single_process_losses(device):
    torch.manual_seed(0)
    model = seeded(LeNet, seed=60)
    compiled = spire.torch.compile(model, device=device)
    opt = torch.optim.SGD(compiled.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(61)
    losses = []
    for _ in range(STEPS):
        x = torch.randn(BATCH, 1, 28, 28, generator=gen)
        t = torch.randint(0, 10, (BATCH,), generator=gen)
        opt.zero_grad()
        loss = F.cross_entropy(compiled(x), t)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_two_gloo_processes_match_one(device, tmp_path):
    here = os.path.dirname(__file__)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]),
               OMP_NUM_THREADS="1")
    init, out = tmp_path / "rendezvous", tmp_path / "losses.txt"
    procs = [subprocess.Popen([sys.executable, os.path.join(here, "ddp_worker.py"), str(rank), "2", str(init), str(out),
                               device, str(STEPS), str(BATCH)], env=env)
             for rank in range(2)]
    for p in procs:
        assert p.wait(timeout=300) == 0
    distributed = [float(v) for v in out.read_text().split()]
    single = single_process_losses(device)
    assert len(distributed) == STEPS
    for step, (a, b) in enumerate(zip(distributed, single)):
        assert abs(a - b) <= 1e-5 * abs(b), (step, a, b)
