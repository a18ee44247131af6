#!/usr/bin/env bash
# The matmul rows of docs/PERFORMANCE.md: spire_bench_matmul (device timestamps, median of RUNS after the half-second
# warm-up; every result checked against a float64 product first) next to cuBLAS through PyTorch's torch.mm in the same
# run (benchmarks/torch_matmul_conv.py --matmul-only: strict fp32 and bf16; TORCH=0 skips it). Heuristic configs (an
# empty tuning cache) unless CONFIGS forces others. Environment:
#   DTYPES    "f32 bf16" by default (f16 too)           SHAPES   N (N^3) or MxKxN, comma-separated; the bench's set
#   DEVICE    all (default), cuda:0 or vulkan:0          RUNS     30
#   BT=1      B stored [N, K], a Linear layer's weight (--b-transposed); BP=1: B a parameter (--b-parameter)
#   FRESH=1   a fresh process per shape (how vulkan:0's big products are timed: a shape timed after others in one
#             process, or with cold clocks, reads slow)
#   LAUNCHES=1  each launch's median too (a packed product's two packing launches and the product)
#   TUNE=1    --tune first (the tuner's picks, into $OUT/tuning.tsv)
#   CONFIGS   bf16/f16 tilings forced one at a time through a one-line tuning cache, each in fresh processes, twice, on DEVICE
#             (vulkan:0 by default here) for the square SHAPES (8192 by default) in the first of DTYPES: config texts
#             as the tuner writes them, e.g. the packed product's
#             "tile_m=128,tile_n=96,tile_k=16,warps_m=2,warps_n=2,stages=8,lookahead=2" or the tensor-core kernel's
#             "tile_m=128,tile_n=256,tile_k=16,warps_m=2,warps_n=4,stages=3,unroll=3,producers=4". A config the
#             lowering does not offer is ignored with a warning: the time then ends in "!" (the heuristic's)
#   STATS=1   with CONFIGS on vulkan:0: the product's registers (SPIRE_VULKAN_PIPELINE_STATS); SASS=1 also its
#             machine code's instruction mix from the driver's pipeline cache (tools/gpu/vulkan_cache_sass.py and
#             nvdisasm: HMMA, 128-bit loads, register moves, spill stores; needs zstd)
#   NCU=1     alone: each of SHAPES (default the few-rows products of a Llama 1B decode step: 1x2048x16384,
#             1x8192x2048, 1x2048x2048, 1x2048x8192) in the first of DTYPES (default bf16), BT=1 BP=1 implied, its
#             tuning candidates (--tune) under Nsight Compute with the caches flushed before each replay, so that the
#             weights come from DRAM as in a decode step (timed alone they stay in the H200's 50 MB L2): each
#             config's median duration, share of DRAM peak, registers and active warps (docs/DECODERS.md's figures)
# With a BEFORE build in the pack (prepare.sh BEFORE=...), spire_bench_matmul_before runs beside it.
# Here: bash tools/gpu/prepare.sh. There, carrying .gpu and .gl, e.g.
#   bash tools/gpu/run-matmul.sh                                      fp32 and bf16, both backends, the default shapes
#   DTYPES=bf16 DEVICE=vulkan:0 SHAPES=8192 FRESH=1 LAUNCHES=1 bash tools/gpu/run-matmul.sh
set -uo pipefail
source tools/gpu/env.sh
runs=${RUNS:-30}
device=${DEVICE:-all}
on() { [ "${!1:-0}" = 1 ]; }  # on NAME: the option NAME is set to 1
flags="--runs $runs"
on BT && flags="$flags --b-transposed"
on BP && flags="$flags --b-parameter"
on LAUNCHES && flags="$flags --launches"
tune=""; on TUNE && tune=--tune
bt_key=""; on BT && bt_key=_bt
cache_file /tmp/none.tsv < /dev/null
bench() {  # binary dtype shapes [args...]
  local bin=$1 dt=$2 shapes=$3; shift 3
  timeout 300 $B/$bin --device $device $flags --dtype $dt ${shapes:+--shapes $shapes} "$@" 2>&1
}
if on NCU; then
  dt=$(echo ${DTYPES:-bf16} | cut -d' ' -f1)
  for shape in $(echo ${SHAPES:-1x2048x16384,1x8192x2048,1x2048x2048,1x2048x8192} | tr , ' '); do
    timeout 150 /usr/local/cuda/bin/ncu --clock-control none --kernel-name regex:matvec --launch-count 120 \
      --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active \
      $B/spire_bench_matmul --device cuda:0 --dtype $dt --b-parameter --b-transposed --shapes $shape --tune --runs 3 \
      --warmup 1 --warmup-ms 0 --tuning-cache /tmp/ncu_tuning.tsv > $OUT/ncu_$shape.txt 2>&1
    python3 - $OUT/ncu_$shape.txt <<'PY'
import re, statistics, sys
text = open(sys.argv[1]).read()
to_us = {"ns": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}
runs = {}
for name, body in re.findall(r"\n  (matvec_\S+) \(.*?\n(.*?)(?=\n  matvec_|\Z)", text, re.S):
    m = {}
    for line in body.splitlines():
        f = line.split()
        if len(f) in (2, 3) and "__" in f[0]:
            v = float(f[-1].replace(",", ""))
            m[f[0]] = v * to_us.get(f[1], 1.0) if f[0] == "gpu__time_duration.sum" and len(f) == 3 else v
    runs.setdefault(name, []).append(m)
print(f"== {sys.argv[1].split('ncu_')[-1][:-4]}: config, median us, % of DRAM peak, registers, % warps active")
for name, ms in runs.items():
    med = lambda k: statistics.median(m.get(k, 0) for m in ms)
    c = re.search(r"_s(\d+)(?:_u(\d+))?_\w+$", name)
    print(f"{'slices ' + c[1] + ' unroll ' + (c[2] or '4'):<20} {med('gpu__time_duration.sum'):7.2f}"
          f" {med('dram__throughput.avg.pct_of_peak_sustained_elapsed'):6.1f} {med('launch__registers_per_thread'):5.0f}"
          f" {med('sm__warps_active.avg.pct_of_peak_sustained_active'):6.1f}  (n={len(ms)})")
PY
  done | tee $OUT/ncu_matvec.txt
  exit 0
fi
if [ -z "${CONFIGS:-}" ]; then
  bins=spire_bench_matmul
  [ -x $B/spire_bench_matmul_before ] && bins="spire_bench_matmul_before spire_bench_matmul"
  for dt in ${DTYPES:-f32 bf16}; do
    for bin in $bins; do
      echo "== $bin --dtype $dt"
      cache=/tmp/none.tsv; on TUNE && cache=$OUT/tuning.tsv
      if on FRESH; then
        for shape in $(echo ${SHAPES:-1024,2048,4096,8192} | tr , ' '); do
          bench $bin $dt $shape --tuning-cache $cache $tune | grep -E "^(cuda|vulkan):0 +[0-9]|^ +launch "
        done
      else
        csv=$OUT/spire_matmul$([ $dt = f32 ] || echo _$dt)$([ $bin = spire_bench_matmul ] || echo _before).csv
        bench $bin $dt "${SHAPES:-}" --tuning-cache $cache $tune --csv $csv
      fi
    done | tee $OUT/spire_matmul_$dt.txt
  done
else
  [ "$device" = all ] && device=vulkan:0
  backend=${device%%:*}
  dt=$(echo ${DTYPES:-bf16} | cut -d' ' -f1)
  for config in $CONFIGS; do
    for n in $(echo ${SHAPES:-8192} | tr , ' '); do
      cache_line $backend matmul m${n}_k${n}_n${n}${bt_key}_a${dt}_b${dt} f32 "$config" | cache_file /tmp/one.tsv
      for run in 1 2; do
        rm -rf /tmp/vc && mkdir -p /tmp/vc
        o=$(SPIRE_CACHE_DIR=/tmp/vc SPIRE_VULKAN_PIPELINE_STATS=${STATS:-0} bench spire_bench_matmul $dt $n --tuning-cache /tmp/one.tsv)
        ms=$(echo "$o" | awk '/^'$device' +[0-9]/{print $4 ($0 ~ /heuristic/ ? "!" : "")}')
        launches=$(echo "$o" | grep -E "^ +launch " | awk '{printf "%s ", $2}')
        regs=$(echo "$o" | grep -o "pipeline '[^']*mma[^']*': CS: Register Count = [0-9]*" | sed "s/.*= //" | head -1)
        mix=""
        if on SASS && [ $run = 1 ] && ls /tmp/vc/*.bin > /dev/null 2>&1; then
          python3 tools/gpu/vulkan_cache_sass.py /tmp/vc/*.bin /tmp/vc/code > /dev/null 2>&1
          f=$(ls /tmp/vc/code/*mma*.code 2>/dev/null | head -1)
          if [ -n "$f" ]; then
            nvdisasm --binary SM90 "$f" > "$f.sass" 2>/dev/null
            mix="HMMA $(grep -c HMMA $f.sass) LDG.128 $(grep -c 'LDG.*128' $f.sass) MOV $(grep -cE ' (MOV|IMAD.MOV)' $f.sass)"
            mix="$mix PRMT $(grep -c PRMT $f.sass) STL $(grep -c STL $f.sass)"
          fi
        fi
        printf "%s %s^3 run %s: %s ms | launches %s| registers %s %s\n" "$config" $n $run "${ms:-fail}" "$launches" "${regs:-?}" "$mix"
        [ -z "$ms" ] && echo "$o" | tail -4
      done
    done
  done | tee $OUT/matmul_configs.txt
fi
[ "${TORCH:-1}" = 1 ] && timeout 300 python3 benchmarks/torch_matmul_conv.py --runs $runs --matmul-only --out $OUT 2>&1 | tee $OUT/torch_matmul.txt
# fp32 joined with PyTorch's into markdown (speed_table.py: % of PyTorch's time, geometric mean).
[ -f $OUT/spire_matmul.csv ] && python3 tools/gpu/speed_table.py $OUT -o $OUT/speed.md
