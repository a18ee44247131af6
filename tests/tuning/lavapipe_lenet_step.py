#!/usr/bin/env python3
"""The lavapipe LeNet step as a figure in the test command's output: `spire lenet bench --batch 64` on the CPU Vulkan
device with the heuristics' configs (what every user gets) and with the tuner's picks for this step, alternated, so
that a regression of the CPU heuristics shows. Speed is printed, never asserted; the test fails only when a run fails,
prints no time, or the tuned run does not use the recorded picks.

    lavapipe_lenet_step.py SPIRE PICKS.tsv

PICKS.tsv holds the tuner's picks for LeNet's step at batch 64 on lavapipe (template, shape, dtype, config), written
by `spire lenet bench --batch 64 --tune --tuning-cache FILE` on lavapipe; this script turns them into a tuning cache
for the device and driver present. Exit status 77 (a skip) when there is no CPU Vulkan device."""
import os
import re
import subprocess
import sys
import tempfile


def cpu_device(spire):
    """(name like vulkan:0, device string, driver string) of the first CPU Vulkan device, or None."""
    out = subprocess.run([spire, "devices"], check=True, capture_output=True, text=True).stdout
    lines = out.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^(vulkan:\d+)\s+(.*)$", line)
        if m and i + 1 < len(lines):
            d = re.match(r"^\s+vendor .*, driver (.*), type CPU$", lines[i + 1])
            if d:
                return m.group(1), m.group(2).strip(), d.group(1).strip()
    return None


def bench(spire, device, cache, runs=20, extra=()):
    """Median ms of the step; the whole output too."""
    cmd = [spire, "lenet", "bench", "--batch", "64", "--runs", str(runs), "--device", device, "--tuning-cache", cache,
           *extra]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"lavapipe_lenet_step: `{' '.join(cmd)}` failed ({run.returncode}):\n{run.stdout}{run.stderr}")
    m = re.search(rf"^{re.escape(device)}\s+\d+\s+([\d.]+)\s+([\d.]+)\s*$", run.stdout, re.M)
    if not m:
        sys.exit(f"lavapipe_lenet_step: no step time in the output of `{' '.join(cmd)}`:\n{run.stdout}{run.stderr}")
    return float(m.group(1)), run.stdout + run.stderr


def kernels(profile):
    """The kernel names of a --profile listing, in launch order."""
    return re.findall(r"^\s+\d+\s+[\d.]+\s+[\d.]+%\s+.*?\s(\S+)$", profile, re.M)


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    spire, picks_path = argv[1], argv[2]
    found = cpu_device(spire)
    if not found:
        print("no CPU Vulkan device (lavapipe) present")
        return 77
    device, device_name, driver = found
    with open(picks_path) as f:
        picks = [line.rstrip("\n").split("\t") for line in f if line.strip() and not line.startswith("#")]
    if not picks or any(len(p) != 4 for p in picks):
        sys.exit(f"lavapipe_lenet_step: {picks_path} needs lines of template, shape, dtype, config (tab-separated)")
    with tempfile.TemporaryDirectory() as tmp:
        tuned = os.path.join(tmp, "tuned.txt")
        with open(tuned, "w") as f:
            f.write("# spire tuning cache 1\n")
            for template, shape, dtype, config in picks:
                # The two times are the cache's record of the tuning run; the lowering reads only the config.
                f.write("\t".join(["vulkan", device_name, driver, template, shape, dtype, config, "0", "0"]) + "\n")
        untuned = os.path.join(tmp, "none.txt")  # does not exist: every kernel's heuristic
        # The tuned step must run the picks: a cache entry the lowering ignores (a config no longer among the
        # candidates) would make this a comparison of the heuristics with themselves.
        # A key that misses (another device string) leaves the cache unused, silently: the kernels would not differ.
        _, tuned_profile = bench(spire, device, tuned, 1, ["--profile"])
        _, default_profile = bench(spire, device, untuned, 1, ["--profile"])
        if "warning" in tuned_profile or kernels(tuned_profile) == kernels(default_profile):
            sys.exit("lavapipe_lenet_step: the tuned run does not use the recorded picks (if the heuristics now pick "
                     f"them all, record the tuner's new picks in {picks_path}):\n{tuned_profile}")
        default_ms, tuned_ms = [], []
        for _ in range(3):
            default_ms.append(bench(spire, device, untuned)[0])
            tuned_ms.append(bench(spire, device, tuned)[0])
    d, t = min(default_ms), min(tuned_ms)
    print(f"lavapipe LeNet training step at batch 64 on {device} ({device_name}), median of 20 runs, best of 3 rounds:")
    print(f"  heuristics {d:.1f} ms, tuner's picks {t:.1f} ms: heuristics / tuned = {d / t:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
