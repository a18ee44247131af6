#!/usr/bin/env bash
# The second half of an old-versus-new GPU run (run-occupancy.sh, run-vector-loads.sh): the resnet18 convolutions at
# batch 64 on cuda:0 with both builds (.gpu/old, .gpu/bin; the geometric mean of new/old over the rows, and the five
# best and worst rows), then resnet18 and the encoder layers through `spire run` with both, beside PyTorch's times
# (benchmarks/torch_models.py). Needs tools/gpu/env.sh sourced and .gpu/models holding the encoder layers.
set -uo pipefail
for v in old bin; do
  echo "== resnet18 convolutions at batch 64 on cuda:0 ($v)"
  timeout 250 .gpu/$v/spire_bench_conv2d --device cuda:0 --runs 10 --csv $OUT/conv_$v.csv > $OUT/conv_$v.txt 2>&1
  tail -3 $OUT/conv_$v.txt
done
python3 - "$OUT" <<'PY'
import csv, math, sys
out = sys.argv[1]
def rows(v):
    with open(f"{out}/conv_{v}.csv") as f:
        return {(r.get("layer", ""), r.get("pass", ""), r.get("batch", "")): float(r["ms"]) for r in csv.DictReader(f) if r.get("ms")}
try:
    old, new = rows("old"), rows("bin")
    keys = [k for k in old if k in new]
    g = math.exp(sum(math.log(new[k] / old[k]) for k in keys) / len(keys))
    print(f"conv rows: {len(keys)}, geometric mean new/old time {g:.3f}")
    for k in sorted(keys, key=lambda k: new[k] / old[k])[:5] + sorted(keys, key=lambda k: new[k] / old[k])[-5:]:
        print(k, f"{old[k]:.4f} -> {new[k]:.4f} ms")
except Exception as e:
    print("conv table:", e)
PY
M=/tmp/models
mkdir -p $M && cp .gpu/models/* $M/
timeout 200 python3 benchmarks/torch_models.py $M 2>&1 | grep -v Warning > $OUT/torch_models.txt
for v in old bin; do
  echo "== models through spire run ($v)"
  timeout 200 python3 tools/gpu/models_table.py .gpu/$v/spire $M $OUT/torch_models.txt > $OUT/models_$v.txt 2>&1
  grep -E "resnet18|encoder_op17" $OUT/models_$v.txt
done
