#!/usr/bin/env bash
# Issue 10 item 1 on the lent GPU: spire's matmul and resnet18 convolutions (forward and both gradients) on
# cuda:0 and vulkan:0 next to PyTorch on the same GPU in the same run, joined into markdown tables with a "% of
# PyTorch time" column. Every spire row is checked against float64 before it is timed.
#
# Here first: tools/gpu/prepare.sh (builds .gpu/bin/spire_bench_matmul and spire_bench_conv2d), then carry .gl
# and .gpu. Configs come from the tuning cache there (empty on a fresh machine: the heuristics); TUNE=1 tunes
# every shape first (much longer) and the tables then say "tuned". RUNS (default 50) sets the runs per row.
# Results in $OUT: spire_*.csv, torch_*.csv, each benchmark's printed table (*.txt) and speed.md (the joined
# tables, also printed). Exits 1 when a spire result was wrong or a step failed.
set -uo pipefail
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
runs=${RUNS:-50}
tune=""
[ "${TUNE:-0}" = "1" ] && tune=--tune
status=0
$B/spire_bench_matmul --device all --runs "$runs" --csv $OUT/spire_matmul.csv $tune 2>&1 | tee $OUT/spire_matmul.txt || status=1
$B/spire_bench_conv2d --device all --runs "$runs" --csv $OUT/spire_conv2d.csv $tune 2>&1 | tee $OUT/spire_conv2d.txt || status=1
python3 benchmarks/torch_matmul_conv.py --out $OUT --runs "$runs" 2>&1 | tee $OUT/torch.txt || status=1
echo
python3 tools/gpu/speed_table.py $OUT -o $OUT/speed.md || status=1
exit $status
