#!/usr/bin/env bash
# LeNet's training epochs with one, two and three steps in flight (spire train lenet --steps-in-flight K), on cuda:0
# and vulkan:0, interleaved and repeated (vulkan:0's epoch varied from run to run with one step in flight), after the
# streamed-value and trainer tests on both backends and the step benchmark's loop (spire_bench_lenet_step --loop: the
# host's feeding, submit and wait per step against the wall time and the device time).
#
# Here: TESTS=1 bash tools/gpu/prepare-goals.sh. There, carrying .gpu and .gl: bash tools/gpu/run-steps-in-flight.sh
# (REPS=2, KS="1 2 3" by default). Prints each run's epoch lines and a summary of seconds per epoch (epochs 2-5: the first holds
# the driver's warm-up).
set -uo pipefail
source tools/gpu/env.sh
[ -f .gpu/pack.tar.xz ] && tar xJf .gpu/pack.tar.xz -C .gpu
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
SPIRE_VULKAN_VALIDATION=1 $B/spire_lowering_tests --gtest_filter='*Streamed*' 2>&1 | grep -E "^\[  (PASSED|FAILED) |Failure|OK \]" | head -30
SPIRE_TEST_FASHION_MNIST=.gpu/data SPIRE_VULKAN_VALIDATION=1 $B/spire_training_tests 2>&1 | grep -E "^\[  (PASSED|FAILED) |Failure|OK \]" | head -20
$B/spire_bench_lenet_step --device all --batch 64 --top 0 --loop ${LOOP:-3000} 2>&1 | tee $OUT/loop.txt
R=$OUT/epochs.txt
: > $R
for rep in $(seq 1 ${REPS:-2}); do
  for dev in cuda:0 vulkan:0; do
    for k in ${KS:-1 2 3}; do
      echo "== rep $rep $dev steps-in-flight $k" >> $R
      timeout 120 $B/spire train lenet --device $dev --data .gpu/data --quiet --steps-in-flight $k 2>&1 \
        | grep -E "^epoch [0-9]+:" >> $R
    done
  done
done
python3 - $R <<'PY'
import re, sys, statistics
runs, key = {}, None
for line in open(sys.argv[1]):
    m = re.match(r"== rep (\d+) (\S+) steps-in-flight (\d)", line)
    if m:
        key = (m.group(2), int(m.group(3))); runs.setdefault(key, []).append([]); continue
    m = re.match(r"epoch (\d+): loss ([0-9.]+), test accuracy ([0-9.]+)%, ([0-9.]+) s", line)
    if m and key: runs[key][-1].append((int(m.group(1)), float(m.group(2)), float(m.group(3)), float(m.group(4))))
print("| device | steps in flight | s/epoch, epochs 2-5 of each run | median | last loss, accuracy |")
print("|---|---:|---|---:|---|")
med = {}
for (dev, k), rs in sorted(runs.items()):
    secs = [e[3] for r in rs for e in r if e[0] >= 2]
    med[(dev, k)] = statistics.median(secs) if secs else float("nan")
    per_run = "; ".join(", ".join(f"{e[3]:.3f}" for e in r if e[0] >= 2) for r in rs)
    last = rs[-1][-1] if rs and rs[-1] else None
    print(f"| {dev} | {k} | {per_run} | {med[(dev, k)]:.3f} | {last[1]:.4f}, {last[2]:.2f}% |" if last else f"| {dev} | {k} | (none) | | |")
for k in (1, 2, 3):
    if ("cuda:0", k) in med and ("vulkan:0", k) in med:
        print(f"vulkan:0 / cuda:0 with {k} in flight: {med[('vulkan:0', k)] / med[('cuda:0', k)]:.2f}")
PY
