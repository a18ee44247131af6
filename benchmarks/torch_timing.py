"""How the PyTorch side of every benchmark times a GPU call: CUDA events around each run, the median of many
runs after a warm-up of at least `warmup` runs and `warmup_ms` of wall time, the same warm-up spire's benchmarks
use (tuning/warm_up.h: the GPU's clocks rise from idle meanwhile, so neither side is timed partly cold)."""
import time

import torch

GPU_WARMUP_MS = 500  # tuning::kGpuWarmupMs


def median_ms(fn, runs=50, warmup=10, warmup_ms=GPU_WARMUP_MS):
    start = time.perf_counter()
    done = 0
    while done < warmup or (time.perf_counter() - start) * 1e3 < warmup_ms:
        fn()
        torch.cuda.synchronize()
        done += 1
    times = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]
