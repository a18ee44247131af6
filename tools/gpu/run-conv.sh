#!/usr/bin/env bash
# The convolution rows of docs/PERFORMANCE.md: resnet18's convolutions (forward, input gradient dgrad, weight gradient
# wgrad; batch 1 and 64) on cuda:0 and vulkan:0 with spire_bench_conv2d (device timestamps, median of RUNS after the
# half-second warm-up, every result checked against float64 first), next to PyTorch's (cuDNN, strict fp32, or f16/bf16
# NCHW) in the same run (benchmarks/torch_matmul_conv.py; TORCH=0 skips it), joined by tools/gpu/speed_table.py into
# $OUT/speed.md (f32: "% of PyTorch time" per row and the geometric mean over the rows). Environment:
#   DTYPE     f32 (default), bf16 or f16 (then the forward passes, on tensor cores where the heuristic takes them)
#   LAYERS    comma-separated names as the bench prints them (conv1, layer1.0.conv1, ..., layer4.0.downsample); all
#   BATCHES   "1,64" by default        PASSES   fwd,dgrad,wgrad (f32) or fwd (half)        RUNS   30
#   ROUNDS    how many times the whole set runs (1)
#   FORCE     configs forced through one tuning cache on both backends: "op/shape=config" items, e.g.
#             conv2d/n64_c64_h56_w56_k64_r3x3_s1x1_p1x1_d1x1_g1=tile_m=64,tile_n=64,tile_k=16,reg_m=8,reg_n=8,winograd=2
#             (half convolutions' keys end in _bf16_bf16_operands; a config the lowering does not offer is ignored
#             with a warning and the bench's "config from" column says heuristic); CACHE=FILE uses a whole cache instead
#   TUNE=1    --tune first, every candidate's time logged to $OUT/candidates.tsv (SPIRE_TUNING_LOG)
# With a BEFORE build in the pack (prepare.sh BEFORE=...), spire_bench_conv2d_before runs beside it.
# Here: bash tools/gpu/prepare.sh. There, carrying .gpu and .gl, e.g.
#   bash tools/gpu/run-conv.sh                                   all 66 f32 rows next to PyTorch (about 5 minutes)
#   DTYPE=bf16 BATCHES=64 bash tools/gpu/run-conv.sh             the half-precision forward passes
set -uo pipefail
source tools/gpu/env.sh
dtype=${DTYPE:-f32}
runs=${RUNS:-30}
passes=${PASSES:-$([ $dtype = f32 ] && echo fwd,dgrad,wgrad || echo fwd)}
cache=/tmp/conv_cache.tsv
if [ -n "${CACHE:-}" ]; then
  cp "$CACHE" $cache
else
  for spec in ${FORCE:-}; do
    op=${spec%%/*}; rest=${spec#*/}
    for backend in cuda vulkan; do cache_line $backend $op ${rest%%=*} f32 "${rest#*=}"; done
  done | cache_file $cache
fi
tune=""
[ "${TUNE:-0}" = 1 ] && tune=--tune && export SPIRE_TUNING_LOG=$OUT/candidates.tsv
bins=spire_bench_conv2d
[ -x $B/spire_bench_conv2d_before ] && bins="spire_bench_conv2d_before spire_bench_conv2d"
for round in $(seq ${ROUNDS:-1}); do
  for bin in $bins; do
    echo "== round $round, $bin, $dtype"
    csv=$OUT/spire_conv2d.csv
    [ $bin = spire_bench_conv2d ] || csv=$OUT/spire_conv2d_before.csv
    timeout 540 $B/$bin --device all --runs $runs --dtype $dtype --passes $passes --batches ${BATCHES:-1,64} \
      ${LAYERS:+--layers $LAYERS} --tuning-cache $cache $tune --csv $csv 2>&1 | grep -vE "^tuning" | tee $OUT/${bin}_$round.txt
  done
done
if [ "${TORCH:-1}" = 1 ]; then
  if [ $dtype = f32 ]; then
    timeout 300 python3 benchmarks/torch_matmul_conv.py --out $OUT --runs $runs > $OUT/torch.txt 2>&1
    python3 tools/gpu/speed_table.py $OUT -o $OUT/speed.md > /dev/null
    grep -E "^\| (layer|conv1|---)|geometric" $OUT/speed.md
  else
    timeout 300 python3 benchmarks/torch_matmul_conv.py --half-conv --out $OUT --runs $runs 2>&1 | tee $OUT/torch_half.txt
  fi
fi
