"""check_startup_profile.py PROFILE.txt BACKEND: the start-up profile printed by embed_demo --profile-startup (or
spire run MODEL.spire --profile-startup) names every phase of a start on BACKEND (vulkan or cuda), each phase's wall
time is a number >= 0, the phases (not their indented parts) sum to no more than the total since process start, and
the total ends at the first result. Exit 1 with the reason otherwise; prints the phases' sum and the total."""
import re
import sys

text = open(sys.argv[1]).read().splitlines()
backend = sys.argv[2]
expected = [
    ("Vulkan: loader, instance, devices listed" if backend == "vulkan"
     else "CUDA: driver loaded, cuInit, devices listed"),
    f"device opened ({backend}:",
    "bundle file mapped",
    "bundle checked and parsed",
    "plan loaded (",
    "  kernels loaded (pipelines / modules)",
    "  weights uploaded (on a second thread)",
    "  buffers allocated",
    "  commands recorded",
    "first run (",
    "outside these phases",
    "total since process start",
]
line = re.compile(r"^(\s*)(.*?)\s+(-?\d+\.\d)\s\s(.*)$")
phases, parts, total, problems = [], [], None, []
for row in text:
    m = line.match(row)
    if not m or row.startswith("startup phase"):
        continue
    indent, name, ms, detail = m.group(1), m.group(2), float(m.group(3)), m.group(4)
    if name == "total since process start":
        total = ms
        if detail != "to the first result":
            problems.append(f"the total does not end at the first result: '{detail}'")
    elif name != "outside these phases":
        (parts if indent else phases).append((name, ms))
    if ms < 0 and name != "outside these phases":
        problems.append(f"'{name}' took {ms} ms")
for want in expected:
    if not any(r.startswith(want) for r in text):
        problems.append(f"no line starts with '{want}'")
if total is None:
    problems.append("no total")
else:
    summed = sum(ms for _, ms in phases)
    print(f"{len(phases)} phases sum to {summed:.1f} ms of the {total:.1f} ms since process start")
    if summed > total:
        problems.append(f"the phases sum to {summed:.1f} ms, more than the total {total:.1f} ms")
    if total <= 0:
        problems.append(f"total {total} ms")
for p in problems:
    print("FAIL:", p)
sys.exit(1 if problems else 0)
