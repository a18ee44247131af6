"""The goal table (docs/PERFORMANCE.md's headline figures) from tools/gpu/run-goals.sh's files: each goal measured on
the H100 (device timestamps for spire; CUDA events for PyTorch, the same GPU in the same session), the number it must
reach, and whether it does.
A goal whose files are missing or unreadable shows as "not measured", never as met.

usage: goals_table.py DIR   (DIR: run-goals.sh's /tmp/goals or the copy of it in $OUT)"""
import csv
import os
import re
import statistics
import sys

d = sys.argv[1]


def rows(name):
    path = os.path.join(d, name)
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def text(name):
    path = os.path.join(d, name)
    return open(path).read() if os.path.exists(path) else ""


def ms_of(table, device, shape):
    for r in table:
        if r.get("device") == device and r.get("shape") == shape and r.get("ms"):
            return float(r["ms"])
    return None


torch_mm = rows("torch_matmul.csv")
square = "8192x8192x8192"
cublas = {"fp32": None, "bf16": None}
for r in torch_mm:
    if r.get("shape") == square:
        cublas["fp32"] = float(r["ms"]) if r.get("ms") else None
        cublas["bf16"] = float(r["ms_bf16"]) if r.get("ms_bf16") else None

lines = []  # (goal, measured, met: True/False/None)


def matmul_goal(dtype, csv_name, devices, need):
    for dev in devices:
        ms, ref = ms_of(rows(csv_name), dev, square), cublas[dtype]
        goal = f"{dtype} matmul 8192³ on {dev} >= {need:.0%} of cuBLAS {dtype}"
        if ms is None or ref is None:
            lines.append((goal, "not measured", None))
        else:
            lines.append((goal, f"{ref / ms:.0%} ({ms:.3f} ms against {ref:.3f})", ref / ms >= need))


matmul_goal("fp32", "spire_matmul.csv", ["cuda:0", "vulkan:0"], 0.80)
matmul_goal("bf16", "spire_matmul_bf16.csv", ["cuda:0"], 0.70)
matmul_goal("bf16", "spire_matmul_bf16.csv", ["vulkan:0"], 0.50)

# LeNet's step: "cuda:0 (NAME): batch 8192, 24 launches, 17 barriers, step 1.285 ms (median of 30), ..."
step = re.compile(r"^(\S+) \(.*\): batch (\d+), (\d+) launches, \d+ barriers, step ([0-9.]+) ms", re.M)
steps = {}
for b in (64, 8192):
    for dev, batch, launches, ms in step.findall(text(f"lenet_step_b{b}.txt")):
        steps[(dev, int(batch))] = (int(launches), float(ms))
for dev in ("cuda:0", "vulkan:0"):
    s = steps.get((dev, 8192))
    lines.append((f"LeNet step at batch 8192 on {dev} <= 1.3 ms",
                  f"{s[1]:.3f} ms" if s else "not measured", s[1] <= 1.3 if s else None))
launch_counts = sorted({v[0] for v in steps.values()})
lines.append(("LeNet step <= 30 launches", ", ".join(map(str, launch_counts)) + " launches" if launch_counts else "not measured",
              max(launch_counts) <= 30 if launch_counts else None))

# resnet18 at batch 64: models_table.py's rows "resnet18  b64 cuda:0  spire_ms eager_fp32 ..."
model = {}
for line in text("models_table.txt").splitlines():
    p = line.split()
    if len(p) >= 5 and p[0] == "resnet18" and p[1] == "b64" and re.match(r"^[0-9.]+$", p[3]):
        model[p[2]] = (float(p[3]), float(p[4]))
for dev, factor, goal in (("cuda:0", 1.0, "resnet18 b64 inference on cuda:0 faster than PyTorch eager fp32"),
                          ("vulkan:0", 1.5, "resnet18 b64 inference on vulkan:0 within 1.5x of PyTorch eager fp32")):
    m = model.get(dev)
    ok = None if not m else (m[0] < m[1] if factor == 1.0 else m[0] <= factor * m[1])
    lines.append((goal, f"{m[0]:.2f} ms against {m[1]:.2f} ms ({m[0] / m[1]:.2f}x)" if m else "not measured", ok))

# Epochs: "epoch 2: loss 0.4, test accuracy 85.10%, 0.23 s (...)"; the first epoch includes compiles: left out.
epoch = {}
for dev in ("cuda:0", "vulkan:0"):
    secs = [float(s) for s in re.findall(r"^epoch (?:[2-9]|\d\d+): .*?, ([0-9.]+) s", text(f"train_{dev.replace(':', '')}.txt"), re.M)]
    epoch[dev] = statistics.median(secs) if secs else None
if epoch["cuda:0"] and epoch["vulkan:0"]:
    ratio = epoch["vulkan:0"] / epoch["cuda:0"]
    lines.append(("vulkan:0's epoch within 1.2x of cuda:0's",
                  f"{ratio:.2f}x ({epoch['vulkan:0']:.2f} s against {epoch['cuda:0']:.2f} s, medians of epochs 2 on)",
                  ratio <= 1.2))
else:
    lines.append(("vulkan:0's epoch within 1.2x of cuda:0's", "not measured", None))

gpu = text("gpu_models.txt").strip() or text("gpu_kernels.txt").strip()
print(f"Issue 10's goals on {gpu or 'an unnamed GPU'}\n")
print("| goal | measured | status |\n|---|---|---|")
for goal, measured, ok in lines:
    print(f"| {goal} | {measured} | {'met' if ok else 'open' if ok is False else 'not measured'} |")
