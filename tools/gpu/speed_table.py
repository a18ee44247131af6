"""Joins spire's heavy-op benchmark CSVs with PyTorch's into one markdown table per benchmark, for
docs/PERFORMANCE.md: each row a shape (matmul) or a layer, batch and pass (conv2d); PyTorch's strict fp32 time
(and its TF32 time, for reference), then per spire device its time, TFLOP/s and "% of PyTorch time"
(PyTorch's fp32 time / spire's time: above 100% spire is faster). Under each table, per device, the geometric
mean of that ratio over the rows both have.

usage: speed_table.py DIR [-o OUT.md]
  reads DIR/spire_matmul.csv, DIR/torch_matmul.csv, DIR/spire_conv2d.csv, DIR/torch_conv2d.csv (from
  spire_bench_matmul/spire_bench_conv2d --csv and benchmarks/torch_matmul_conv.py --out); a benchmark whose
  spire CSV is missing is left out, a missing PyTorch CSV leaves its columns empty.
"""
import argparse
import csv
import math
import os

# Per benchmark: its title and the CSV columns that name a row in both spire's and PyTorch's files.
BENCHMARKS = [
    ("matmul", "fp32 matmul [M,K] x [K,N]", ["shape", "model"]),
    ("conv2d", "fp32 resnet18 convolutions (fwd; dgrad = input gradient; wgrad = weight gradient)",
     ["layer", "geometry", "batch", "pass"]),
]


def read_csv(path):
    if not os.path.exists(path):
        return None
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def number(text):
    try:
        v = float(text)
        return v if math.isfinite(v) else None
    except (TypeError, ValueError):
        return None


def fmt(v, spec):
    return "" if v is None else format(v, spec)


def table(title, keys, spire_rows, torch_rows):
    devices = []  # spire's devices in the order the benchmark ran them
    for r in spire_rows:
        if r["device"] not in devices:
            devices.append(r["device"])
    names = {r["device"]: r.get("device_name", "") for r in spire_rows}
    spire = {(r["device"],) + tuple(r[k] for k in keys): r for r in spire_rows}
    torch_by_key = {tuple(r[k] for k in keys): r for r in (torch_rows or [])}
    row_keys = []
    for r in spire_rows:
        k = tuple(r[c] for c in keys)
        if k not in row_keys:
            row_keys.append(k)

    torch_name = torch_rows[0]["device_name"] if torch_rows else "PyTorch: no results"
    lines = [f"### {title}", "",
             "spire: " + "; ".join(f"{d} = {names[d]}" for d in devices) + f". PyTorch: {torch_name}.",
             "spire's times are device time inside a recorded stream; PyTorch's span one eager call between CUDA "
             "events, so rows of a few tens of microseconds include its launch cost.", ""]
    header = keys + ["PyTorch fp32 ms", "PyTorch TF32 ms"]
    for d in devices:
        header += [f"{d} ms", f"{d} TFLOP/s", f"{d} % of PyTorch time"]
    lines += ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    ratios = {d: [] for d in devices}
    for k in row_keys:
        t = torch_by_key.get(k, {})
        t_ms = number(t.get("ms"))
        cells = list(k) + [fmt(t_ms, ".4f"), fmt(number(t.get("ms_tf32")), ".4f")]
        for d in devices:
            s = spire.get((d,) + k)
            s_ms = number(s["ms"]) if s else None
            ratio = 100.0 * t_ms / s_ms if t_ms and s_ms else None
            if ratio:
                ratios[d].append(ratio)
            # The benchmark's own limit (benchmarks/support/dot_check.h); "inf" (unwritten elements) reads as None.
            err = number(s.get("max_rel_err")) if s else 0.0
            wrong = " (wrong result)" if s and (err is None or err > 1e-3) else ""
            cells += [fmt(s_ms, ".4f") + wrong, fmt(number(s["tflops"]) if s else None, ".3g"),
                      fmt(ratio, ".0f") + ("%" if ratio else "")]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for d in devices:
        if ratios[d]:
            gmean = math.exp(sum(math.log(r) for r in ratios[d]) / len(ratios[d]))
            lines.append(f"{d}: geometric mean of % of PyTorch time over {len(ratios[d])} rows: {gmean:.0f}%")
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dir")
    p.add_argument("-o", "--out")
    args = p.parse_args()
    parts = []
    for name, title, keys in BENCHMARKS:
        spire_rows = read_csv(os.path.join(args.dir, f"spire_{name}.csv"))
        if spire_rows:
            parts.append(table(title, keys, spire_rows, read_csv(os.path.join(args.dir, f"torch_{name}.csv"))))
    text = "\n".join(parts) if parts else "speed_table.py: no spire CSVs in " + args.dir + "\n"
    print(text, end="")
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
