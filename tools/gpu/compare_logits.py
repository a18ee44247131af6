"""Max relative difference between the logits of several safetensors files, pairwise, and against the last
(the float64 reference). Relative to each row's largest |logit| so tiny logits do not dominate."""
import itertools, sys
from safetensors.numpy import load_file
files = sys.argv[1:]
logits = {f: load_file(f)["logits"].astype("float64") for f in files}
def rel(a, b):
    scale = abs(b).max(axis=-1, keepdims=True)
    return float((abs(a - b) / scale).max())
for a, b in itertools.combinations(files, 2):
    print(f"max rel diff {rel(logits[a], logits[b]):.3e}  {a}  vs  {b}")
