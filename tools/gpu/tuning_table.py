"""What autotuning gains over the heuristic configs, measured with spire's own device
timestamps: for each device and workload, the step with every kernel's heuristic config (a tuning cache file
that does not exist) and with the configs `--tune` chose (a first process tunes into CACHE, a second one times
the step with the cache's winners). The whole
step is timed by `--bench` alone; each launch by a second run with `--profile` (a timestamp after every
launch, which adds a little to the step, so the two are kept apart).

Workloads: the LeNet training step at batch 64 and 8192 (`spire lenet bench`), resnet18 inference at batch 1
and 64 (`spire run`; MODELS/resnet18.onnx, torchvision's with random weights exported by
benchmarks/torch_models.py --export-only where it is missing, and one random batch of 1 and of 64 images, fixed
seeds, written beside it).
Writes the summary table to stdout and per-launch comparisons (the resnet18 layers) to LAYERS.

usage: tuning_table.py SPIRE MODELS CACHE LAYERS [DEVICE...]
TUNING_WORKLOADS="lenet step b64,resnet18 b1" runs only those (a rerun of a part, or a check on a CPU);
TUNING_RUNS=N and TUNING_PROFILE_RUNS=M time N and M replays instead of 30 and 10."""
import os
import re
import subprocess
import sys
import time

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from safetensors_io import write_safetensors  # noqa: E402

spire, models, cache, layers_path = sys.argv[1:5]
devices = sys.argv[5:] or ["cuda:0", "vulkan:0"]
no_cache = os.path.join(os.path.dirname(cache), "no-such-cache.txt")  # heuristics: a file that does not exist
RUNS = os.environ.get("TUNING_RUNS", "30")  # timed replays of the whole step
PROFILE_RUNS = os.environ.get("TUNING_PROFILE_RUNS", "10")  # and of the step with a timestamp after each launch
LAUNCH = re.compile(r"^\s*(\d+)\s+([0-9.]+)\s+[0-9.]+%\s+(\S+)\s+(\S+)\s*$")


def export_inputs():
    """resnet18.onnx (exported where missing) and its random inputs at batch 1 and 64 in MODELS."""
    os.makedirs(models, exist_ok=True)
    if not os.path.exists(os.path.join(models, "resnet18.onnx")):
        subprocess.run([sys.executable, os.path.join(here, "..", "..", "benchmarks", "torch_models.py"), models,
                        "--export-only", "resnet18"], check=True)
    for batch in (1, 64):
        x = np.random.default_rng(batch).standard_normal((batch, 3, 224, 224)).astype(np.float32)
        write_safetensors(os.path.join(models, f"resnet18.b{batch}.in.safetensors"), {"x": x})


def run(args, timeout):
    """(exit status, stdout + stderr, seconds); 124 when it ran past `timeout` seconds."""
    start = time.time()
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        return r.returncode, r.stdout + r.stderr, time.time() - start
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return 124, out, time.time() - start


def parse(text, device):
    """(median step ms, {node: summed median ms of its launches}, {node: kernel names})"""
    m = re.search(rf"^{re.escape(device)}\s+\d+\s+([0-9.]+)\s+[0-9.]+\s*$", text, re.M)
    nodes, kernels = {}, {}
    for line in text.splitlines():
        l = LAUNCH.match(line)
        if l:
            nodes[l.group(3)] = nodes.get(l.group(3), 0.0) + float(l.group(2))
            kernels.setdefault(l.group(3), []).append(l.group(4))
    return (float(m.group(1)) if m else None), nodes, kernels


def workloads():
    """(name, command for the whole step's time, command for each launch's)"""
    for batch in (64, 8192):
        base = [spire, "lenet", "bench", "--batch", str(batch)]
        yield f"lenet step b{batch}", base + ["--runs", RUNS], base + ["--runs", PROFILE_RUNS, "--profile"]
    for batch in (1, 64):
        base = [spire, "run", os.path.join(models, "resnet18.onnx"), "--inputs",
                os.path.join(models, f"resnet18.b{batch}.in.safetensors"), "--outputs",
                f"/tmp/resnet18.b{batch}.out.safetensors"]
        yield f"resnet18 b{batch}", base + ["--bench", RUNS], base + ["--bench", PROFILE_RUNS, "--profile"]


export_inputs()
only = [w.strip() for w in os.environ.get("TUNING_WORKLOADS", "").split(",") if w.strip()]
summary = []
with open(layers_path, "w") as layers:
    for device in devices:
        for name, bench, profile in workloads():
            if only and name not in only:
                continue
            dev = ["--device", device]
            heuristic, tuned = ["--tuning-cache", no_cache], ["--tuning-cache", cache]
            # Tunes into the cache. The tuned step is then timed in a process of its own, as the heuristic one is: on
            # the H100's Vulkan driver a step timed in the process that just tuned ran up to 3x slower (bimodal, the
            # same kernels: see docs/PERFORMANCE.md), which would blame the configs for the driver's state.
            rc_x, out_x, secs = run(bench + dev + tuned + ["--tune"], 240)
            rc_t, out_t, _ = run(bench + dev + tuned, 120)
            rc_h, out_h, _ = run(bench + dev + heuristic, 120)
            rc_hp, out_hp, _ = run(profile + dev + heuristic, 120)
            rc_tp, out_tp, _ = run(profile + dev + tuned, 120)
            for what, rc, out in (("--tune and the step in the same process", rc_x, out_x), ("the tuned step", rc_t, out_t),
                                  ("the heuristic step", rc_h, out_h),
                                  ("the heuristic launches", rc_hp, out_hp), ("the tuned launches", rc_tp, out_tp)):
                layers.write(f"==== {name} on {device}: {what} (rc {rc})\n{out}\n")
            h_ms, _, _ = parse(out_h, device)
            t_ms, _, _ = parse(out_t, device)
            _, h_nodes, _ = parse(out_hp, device)
            _, t_nodes, t_kernels = parse(out_tp, device)
            if rc_x:
                rc_t, out_t = rc_x, out_x  # the tuning failed: report that
            if rc_h or rc_t or h_ms is None or t_ms is None:
                tail = (out_t if rc_t else out_h).strip()[-300:]
                summary.append(f"{name:<18} {device:<9} FAILED (rc {rc_h}/{rc_t}): {tail}")
                print(summary[-1], flush=True)
                continue
            summary.append(f"{name:<18} {device:<9} {h_ms:>12.3f} {t_ms:>10.3f} {h_ms / t_ms:>7.2f}x {secs:>9.0f}")
            print(summary[-1], flush=True)
            # Per node (each layer's launches summed), heaviest first: what tuning changed where.
            layers.write(f"---- {name} on {device}: per node, heuristic vs tuned (median ms of each launch, summed)\n")
            layers.write(f"{'node':<34} {'heuristic':>10} {'tuned':>10} {'gain':>7}  tuned kernel\n")
            for node in sorted(h_nodes, key=lambda n: -h_nodes[n]):
                t = t_nodes.get(node, float("nan"))
                gain = h_nodes[node] / t if t > 0 else float("nan")
                layers.write(f"{node:<34} {h_nodes[node]:>10.4f} {t:>10.4f} {gain:>6.2f}x  "
                             f"{' '.join(t_kernels.get(node, []))}\n")
            layers.write(f"{'sum of the launches':<34} {sum(h_nodes.values()):>10.4f} {sum(t_nodes.values()):>10.4f}\n\n")

print()
print(f"{'workload':<18} {'device':<9} {'heuristic ms':>12} {'tuned ms':>10} {'gain':>8} {'tuning s':>9}")
for line in summary:
    print(line)
