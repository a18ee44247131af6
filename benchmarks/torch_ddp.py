"""Training throughput of a model compiled by spire under torch.nn.parallel.DistributedDataParallel with NCCL: one
process per GPU on cuda:0 .. cuda:N-1 (spire's cuda:R in process R, torch's CUDA tensors in place), against the same
global batch on one GPU, with eager PyTorch's DDP timed the same way as the anchor (fp32, TF32 off on both sides).

Strong scaling: the global batch is fixed (--batch), split evenly over the GPUs, so a run on N GPUs computes the same
losses as one GPU on the whole batch; the losses of every world size are printed and compared with one GPU's
(DDP averages the gradients of the shards, which equals the gradient of the whole batch's mean loss).

usage: PYTHONPATH=build/python python3 benchmarks/torch_ddp.py [--model resnet18|lenet] [--batch 64] [--steps 30]
       [--warmup 5] [--gpus 1,2] [--how compile|dynamo|eager,...]
  compile: DDP(spire.torch.compile(model, device=cuda:R)); dynamo: torch.compile(DDP(model), backend="spire") (torch
  >= 2: Dynamo's DDPOptimizer cuts the graph at the gradient buckets); eager: DDP(model), PyTorch alone.
Needs as many CUDA GPUs as the largest world size. Images per second: global batch x steps / wall time of the timed
steps (a barrier and torch.cuda.synchronize before and after)."""
import argparse
import os
import statistics
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F


def make_model(name):
    torch.manual_seed(0)
    if name == "resnet18":
        import torchvision
        return torchvision.models.resnet18(num_classes=1000), (3, 224, 224), 1000
    if name == "lenet":
        from spire.torch.lenet import LeNet
        return LeNet(), (1, 28, 28), 10
    raise SystemExit(f"torch_ddp.py: unknown model {name!r} (resnet18, lenet)")


def batches(global_batch, shape, classes, count):
    """`count` fixed batches of the whole global batch (every world size sees the same data), on the CPU."""
    gen = torch.Generator().manual_seed(1)
    return [(torch.randn((global_batch,) + shape, generator=gen), torch.randint(0, classes, (global_batch,),
                                                                                generator=gen))
            for _ in range(count)]


def worker(rank, world, args, how, init_file, results):
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # NVLink multicast stays off (the GPU machine's rule)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"file://{init_file}", rank=rank, world_size=world,
                            device_id=torch.device("cuda", rank))
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device("cuda", rank)
    model, shape, classes = make_model(args.model)
    model = model.to(device)
    if how == "compile":
        import spire.torch
        ddp = nn.parallel.DistributedDataParallel(spire.torch.compile(model, device=f"cuda:{rank}"),
                                                  device_ids=[rank])
    elif how == "dynamo":
        import spire.torch  # registers the backend
        ddp = torch.compile(nn.parallel.DistributedDataParallel(model, device_ids=[rank]), backend="spire",
                            options={"device": f"cuda:{rank}"})
    else:
        ddp = nn.parallel.DistributedDataParallel(model, device_ids=[rank])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    share = args.batch // world
    mine = slice(rank * share, (rank + 1) * share)
    data = [(x[mine].to(device), t[mine].to(device)) for x, t in batches(args.batch, shape, classes, 4)]
    losses, seconds = [], []

    def step(i):
        x, t = data[i % len(data)]
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(ddp(x), t)
        loss.backward()
        opt.step()
        return loss.detach()

    for i in range(args.warmup):
        total = step(i)
        dist.all_reduce(total)
        losses.append(total.item() / world)
    # Timed in rounds of 10 steps (the median round is the figure; losses read after each round, not each step).
    done = args.warmup
    while done < args.warmup + args.steps:
        n = min(10, args.warmup + args.steps - done)
        torch.cuda.synchronize()
        dist.barrier()
        t0 = time.perf_counter()
        round_losses = [step(done + j) for j in range(n)]
        torch.cuda.synchronize()
        dist.barrier()
        seconds.append((time.perf_counter() - t0) / n)
        for total in round_losses:
            dist.all_reduce(total)
            losses.append(total.item() / world)
        done += n
    if rank == 0:
        results.put((how, world, losses, statistics.median(seconds)))
    dist.destroy_process_group()


def run(args, how, world):
    ctx = mp.get_context("spawn")
    results = ctx.SimpleQueue()
    with tempfile.TemporaryDirectory() as tmp:
        mp.start_processes(worker, args=(world, args, how, os.path.join(tmp, "rendezvous"), results), nprocs=world,
                           join=True, start_method="spawn")
    return results.get()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="resnet18")
    p.add_argument("--batch", type=int, default=64, help="the global batch, split over the GPUs")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--gpus", default="1,2")
    p.add_argument("--how", default="compile,eager")
    args = p.parse_args()
    worlds = [int(w) for w in args.gpus.split(",")]
    if max(worlds) > torch.cuda.device_count():
        raise SystemExit(f"torch_ddp.py: {max(worlds)} GPUs asked for, {torch.cuda.device_count()} present")
    rows = {}
    for how in args.how.split(","):
        for world in worlds:
            rows[how, world] = run(args, how, world)
            _, _, losses, sec = rows[how, world]
            print(f"{how:8s} {world} GPU(s): {sec * 1e3:8.2f} ms/step, {args.batch / sec:9.1f} images/s; losses "
                  + " ".join(f"{v:.5f}" for v in losses[:3]) + " ... " + f"{losses[-1]:.5f}", flush=True)
    print(f"\n{args.model}, global batch {args.batch}, SGD momentum 0.9, fp32 (TF32 off), NCCL, median of rounds of "
          f"10 steps after {args.warmup} warm-up steps")
    print("| how | GPUs | ms/step | images/s | vs 1 GPU | largest loss difference from 1 GPU (relative) |")
    print("|---|---:|---:|---:|---:|---:|")
    for (how, world), (_, _, losses, sec) in rows.items():
        one = rows.get((how, 1))
        speedup = f"{one[3] / sec:.2f}x" if one else "-"
        diff = (max(abs(a - b) / abs(b) for a, b in zip(losses, one[2])) if one else float("nan"))
        print(f"| {how} | {world} | {sec * 1e3:.2f} | {args.batch / sec:.1f} | {speedup} | {diff:.1e} |")


if __name__ == "__main__":
    main()
