"""torchvision detection models (random weights, a fixed seed) through spire.torch.compile, which splits them where
neither trace follows their Python (python/spire/torch/stand_ins.py), next to eager PyTorch in the same process:
the submodules spire runs, compile seconds, wall ms per call (median of RUNS after warm-up; with CUDA tensors synchronized
after each), and the detections against eager's (both sorted, so that equal scores in another order agree); on
torch >= 2 also torch.compile(backend="spire") (ms, and its detections against eager's). fp32, TF32 off.

    python3 benchmarks/torch_detection.py MODEL SIZE DEVICE [TORCH_DEVICE]
        e.g. fasterrcnn_mobilenet_v3_large_320_fpn 320 cuda:0 cuda      (TORCH_DEVICE: where the tensors live, cpu)
"""
import os
import statistics
import sys
import time
import warnings

import torch
import torchvision

import spire.torch
from spire.torch.stand_ins import compiled_children

RUNS = int(os.environ.get("RUNS", 20))


def detections(out):
    """Every image's detections as sorted rows (label, box, score), in float64."""
    rows = []
    for d in out:
        r = torch.cat([d["labels"].double()[:, None], d["boxes"].double(), d["scores"].double()[:, None]], 1)
        rows.append(sorted(map(tuple, r.cpu().tolist())))
    return rows


def difference(got, want):
    """Largest difference of matched rows; inf where the counts differ."""
    worst = 0.0
    for g, w in zip(detections(got), detections(want)):
        if len(g) != len(w):
            return float("inf")
        worst = max([worst] + [abs(a - b) for p, q in zip(g, w) for a, b in zip(p, q)])
    return worst


def wall_ms(fn, images, synchronize):
    with torch.no_grad():
        start = time.perf_counter()
        while time.perf_counter() - start < 1.0:
            fn(images)
            synchronize()
        times = []
        for _ in range(RUNS):
            t = time.perf_counter()
            fn(images)
            synchronize()
            times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def main():
    name, size, device = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    where = torch.device(sys.argv[4] if len(sys.argv) > 4 else "cpu")
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    model = getattr(torchvision.models.detection, name)(weights=None, weights_backbone=None).eval().to(where)
    images = [torch.rand(3, size, size, device=where)]
    synchronize = torch.cuda.synchronize if where.type == "cuda" else (lambda: None)
    compiled = spire.torch.compile(model, device=device)
    t = time.perf_counter()
    with torch.no_grad():
        compiled(images)
    compile_s = time.perf_counter() - t
    worst = 0.0
    for seed in (1, 2):  # other images than the first call's
        torch.manual_seed(seed)
        other = [torch.rand(3, size, size, device=where)]
        with torch.no_grad():
            worst = max(worst, difference(compiled(other), model(other)))
    # The submodules spire ran, "(split)" where one was split again (its own Python in PyTorch).
    parts = ["whole"] if compiled._stand_in is None else [
        name + (" (split)" if c._stand_in is not None else "")
        for name, c in sorted(compiled_children(compiled._stand_in).items())]
    eager = wall_ms(model, images, synchronize)
    spire_ms = wall_ms(compiled, images, synchronize)
    dynamo = "-"  # torch >= 2: torch.compile(backend="spire"), whose graph breaks split the model instead
    if hasattr(torch, "compile"):
        try:
            torch._dynamo.reset()
            through = torch.compile(model, backend="spire", options={"device": device})
            with torch.no_grad():
                through(images)
                error = max(difference(through(o), model(o)) for o in (images,))
            dynamo = f"{wall_ms(through, images, synchronize):.2f} ({error:.1e})"
        except Exception as e:  # reported in the table, not fatal: the other columns stand
            dynamo = f"{type(e).__name__}: {str(e).splitlines()[0][:80]}"
    print(f"| {name} | {size} | {device} ({where.type} tensors) | {eager:.2f} | {spire_ms:.2f} | {eager / spire_ms:.2f}x "
          f"| {compile_s:.1f} | {worst:.1e} | {dynamo} | {', '.join(parts)} |", flush=True)


if __name__ == "__main__":
    main()
