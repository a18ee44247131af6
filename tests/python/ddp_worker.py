"""One process of test_ddp: LeNet compiled by spire, wrapped in DistributedDataParallel (gloo), trained on its half
of each global batch; rank 0 writes the global losses (the mean of both halves') to a file."""
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F

import spire.torch
from models import LeNet, seeded


def run(rank, world, init_file, out_file, device, steps, batch, mode="compile"):
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = seeded(LeNet, seed=60)
    if mode == "dynamo":
        # torch >= 2: torch.compile of the DDP module; buckets of 0.1 MB make Dynamo's DDPOptimizer cut LeNet's graph
        # into several pieces, each compiled by the backend on its own. (Its first bucket, 1 MB by default, must not be
        # larger than the others, and DDP's reducer reads the same default.)
        dist._DEFAULT_FIRST_BUCKET_BYTES = 64 * 1024
        ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.1)
        ddp = torch.compile(ddp, backend="spire", options={"device": device})
    else:
        ddp = torch.nn.parallel.DistributedDataParallel(spire.torch.compile(model, device=device))
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(61)
    losses = []
    for _ in range(steps):
        x = torch.randn(batch, 1, 28, 28, generator=gen)
        t = torch.randint(0, 10, (batch,), generator=gen)
        half = batch // world
        mine = slice(rank * half, (rank + 1) * half)
        opt.zero_grad()
        loss = F.cross_entropy(ddp(x[mine]), t[mine])
        loss.backward()
        opt.step()
        total = loss.detach().clone()
        dist.all_reduce(total)
        losses.append(total.item() / world)
    if rank == 0:
        with open(out_file, "w") as f:
            f.write("\n".join(repr(v) for v in losses))
        if mode == "dynamo":
            from spire.torch.dynamo_backend import compiled_pieces
            with open(str(out_file) + ".pieces", "w") as f:
                f.write(str(sum(1 for p in compiled_pieces() if p.compilations)))
    dist.destroy_process_group()


if __name__ == "__main__":
    rank, world, init_file, out_file, device, steps, batch = sys.argv[1:8]
    run(int(rank), int(world), init_file, out_file, device, int(steps), int(batch), *sys.argv[8:])
