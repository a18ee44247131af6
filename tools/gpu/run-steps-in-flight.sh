#!/usr/bin/env bash
# LeNet's training epochs with one and two steps in flight (spire train lenet --steps-in-flight K) on cuda:0 and
# vulkan:0, on vulkan:0 also with the minibatch copied in by the step rather than written in place into mapped device
# memory (SPIRE_VULKAN_FORCE_STAGING=1: the copying path, as before the in-place inputs), interleaved and repeated
# (vulkan:0's epoch varied from run to run with one step in flight). First the streamed-value, trainer and mapped-memory
# tests on both backends, and the step benchmark's loop (spire_bench_lenet_step --loop: the host's feeding, submit and
# wait per step against the wall time and the device time), both ways on vulkan:0.
#
# Here: TESTS=1 bash tools/gpu/prepare-goals.sh. There, carrying .gpu and .gl: bash tools/gpu/run-steps-in-flight.sh
# (REPS=2 by default). Prints a summary of seconds per epoch (epochs 2-5: the first holds the driver's warm-up); each
# run's epoch lines are in $OUT/epochs.txt.
set -uo pipefail
source tools/gpu/env.sh
[ -f .gpu/pack.tar.xz ] && tar xJf .gpu/pack.tar.xz -C .gpu
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
summary='^\[  (PASSED|FAILED) |Failure'
SPIRE_VULKAN_VALIDATION=1 $B/spire_lowering_tests --gtest_filter='*Streamed*' 2>&1 | grep -E "$summary" | head -20
SPIRE_TEST_FASHION_MNIST=.gpu/data SPIRE_VULKAN_VALIDATION=1 $B/spire_training_tests 2>&1 | grep -E "$summary" | head -20
SPIRE_VULKAN_VALIDATION=1 $B/spire_runtime_conformance_tests 2>&1 | grep -E "$summary" | head -20
for staging in 0 1; do
  echo "== step loop, SPIRE_VULKAN_FORCE_STAGING=$staging"
  SPIRE_VULKAN_FORCE_STAGING=$staging $B/spire_bench_lenet_step --device all --batch 64 --top 0 --loop ${LOOP:-3000} 2>&1 \
    | grep -vE "^ +ms +share"
done | tee $OUT/loop.txt
R=$OUT/epochs.txt
: > $R
for rep in $(seq 1 ${REPS:-2}); do
  for run in "cuda:0 1 0" "cuda:0 2 0" "vulkan:0 1 1" "vulkan:0 2 1" "vulkan:0 1 0" "vulkan:0 2 0"; do
    set -- $run
    echo "== rep $rep $1 steps-in-flight $2 staging $3" >> $R
    SPIRE_VULKAN_FORCE_STAGING=$3 timeout 120 $B/spire train lenet --device $1 --data .gpu/data --quiet --steps-in-flight $2 \
      2>&1 | grep -E "^epoch [0-9]+:" >> $R
  done
done
python3 - $R <<'PY'
import re, sys, statistics
runs, key = {}, None
for line in open(sys.argv[1]):
    m = re.match(r"== rep (\d+) (\S+) steps-in-flight (\d) staging (\d)", line)
    if m:
        key = (m.group(2), int(m.group(3)), "copied in" if m.group(4) == "1" or m.group(2) == "cuda:0" else "in place")
        runs.setdefault(key, []).append([]); continue
    m = re.match(r"epoch (\d+): loss ([0-9.]+), test accuracy ([0-9.]+)%, ([0-9.]+) s", line)
    if m and key: runs[key][-1].append((int(m.group(1)), float(m.group(2)), float(m.group(3)), float(m.group(4))))
print("| device | steps in flight | minibatch | s/epoch, epochs 2-5 of each run | median | last loss, accuracy |")
print("|---|---:|---|---|---:|---|")
med = {}
for key, rs in sorted(runs.items()):
    secs = [e[3] for r in rs for e in r if e[0] >= 2]
    med[key] = statistics.median(secs) if secs else float("nan")
    per_run = "; ".join(", ".join(f"{e[3]:.3f}" for e in r if e[0] >= 2) for r in rs)
    last = rs[-1][-1] if rs and rs[-1] else None
    print(f"| {key[0]} | {key[1]} | {key[2]} | {per_run} | {med[key]:.3f} | " + (f"{last[1]:.4f}, {last[2]:.2f}% |" if last else "(none) |"))
for k in (1, 2):
    for how in ("copied in", "in place"):
        if ("cuda:0", k, "copied in") in med and ("vulkan:0", k, how) in med:
            print(f"vulkan:0 ({how}) / cuda:0 with {k} in flight: {med[('vulkan:0', k, how)] / med[('cuda:0', k, 'copied in')]:.2f}")
PY
