#!/usr/bin/env bash
# Tilings of the product from packed operands (lowering/heavy_kernels/matmul_packed_kernel.h) on the H100's vulkan:0,
# each forced through a one-line tuning cache: bf16 SIZE^3 (default 8192), the step and each launch's median
# (spire_bench_matmul --launches), the product's register count and, for every tiling, its SASS instruction mix
# (tools/gpu/vulkan_cache_sass.py, nvdisasm): HMMA, 128-bit loads, register moves, spill stores. Then PyTorch's
# torch.mm in the same run. CONFIGS: "tile_m,tile_n,warps_m,warps_n,stages,lookahead" per tiling; the lowering ignores
# (with a warning) a cached choice outside the tuner's candidates, so a tiling must be in matmul_packed_candidates.
# Pack spire_bench_matmul (and zstd) into .gpu/bin; carry .gpu and .gl.
set -uo pipefail
source tools/gpu/env.sh
[ -d .gpu/bin ] || tar xJf .gpu/pack.tar.xz -C .gpu
export PATH=$PWD/.gpu/bin:$PATH
n=${SIZE:-8192}
# The device's and driver's names as vulkan:0 reports them: from a tuning cache the tuner writes for a small product.
rm -f /tmp/names.tsv
timeout 120 $B/spire_bench_matmul --device vulkan:0 --runs 2 --shapes 256 --dtype bf16 --tune \
  --tuning-cache /tmp/names.tsv > /dev/null 2>&1
name=$(grep -v "^#" /tmp/names.tsv | head -1 | cut -f2)
drv=$(grep -v "^#" /tmp/names.tsv | head -1 | cut -f3)
echo "device '$name', driver '$drv'"
for spec in ${CONFIGS:-128,64,2,2,8,3}; do
  IFS=, read tm tn wm wn s l <<< "$spec"
  config="tile_m=$tm,tile_n=$tn,tile_k=16,warps_m=$wm,warps_n=$wn,stages=$s,lookahead=$l"
  { printf "# spire tuning cache 1\n"
    printf "vulkan\t$name\t$drv\tmatmul\tm${n}_k${n}_n${n}_abf16_bbf16\tf32\t$config\t1\t1\n"; } > /tmp/one.tsv
  for run in 1 2; do
    rm -rf /tmp/vc; mkdir -p /tmp/vc
    o=$(SPIRE_CACHE_DIR=/tmp/vc SPIRE_VULKAN_PIPELINE_STATS=1 timeout 120 $B/spire_bench_matmul --device vulkan:0 \
        --runs 30 --shapes $n --dtype bf16 --launches --tuning-cache /tmp/one.tsv 2>&1)
    step=$(echo "$o" | awk '/^vulkan:0 +[0-9]/{print $4}')
    from=$(echo "$o" | awk '/^vulkan:0 +[0-9]/{print $9}')
    launches=$(echo "$o" | grep -E "^ +launch " | awk '{printf "%s ", $2}')
    regs=$(echo "$o" | grep -o "pipeline '[^']*packed[^']*': CS: Register Count = [0-9]*" | sed "s/.*= //" | head -1)
    mix=""
    if [ $run = 1 ] && ls /tmp/vc/*.bin > /dev/null 2>&1; then
      python3 tools/gpu/vulkan_cache_sass.py /tmp/vc/*.bin /tmp/vc/code > /dev/null 2>&1
      f=$(ls /tmp/vc/code/*packed*mma*.code 2>/dev/null | head -1)
      if [ -n "$f" ]; then
        nvdisasm --binary SM90 "$f" > "$f.sass" 2>/dev/null
        mix="HMMA $(grep -c HMMA $f.sass) LDG.128 $(grep -c 'LDG.*128' $f.sass)"
        mix="$mix MOV $(grep -cE ' (MOV|IMAD.MOV)' $f.sass) PRMT $(grep -c PRMT $f.sass) STL $(grep -c STL $f.sass)"
      fi
    fi
    printf "%-18s run %s: step %8s (%s) | launches %s| regs %s %s\n" "$spec" $run "${step:-fail}" "$from" \
      "$launches" "${regs:-?}" "$mix"
    [ -z "$step" ] && echo "$o" | tail -4
  done
done
echo "== PyTorch"
timeout 300 python3 benchmarks/torch_matmul_conv.py --runs 30 --matmul-only 2>&1 | grep -E "^shape|^$n"
