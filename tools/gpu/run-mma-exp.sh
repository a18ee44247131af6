#!/usr/bin/env bash
# Variants of vulkan:0's tensor-core matmul at bf16 8192^3 (docs/PERFORMANCE.md, 2026-11-27), each in three fresh
# processes with its registers and code size. Needs a build with docs/performance/vulkan_mma_experiments_2026-11-27.patch
# applied (git apply; kept out of the code since its kernels compute wrong results on purpose under SPIRE_MMA_ABLATE), which
# reads SPIRE_MMA_EXP: phys=2 (2 workgroup-memory stages for a deeper pipeline, relying on copies landing exactly
# at their wait on Vulkan), virt=1 (the prologue as rounds of the loop), fpre=1 (fragments of the next slice loaded
# during this one's products) (drain=1 of that day, the prologue's copies landing before the loop, is now the kernel's own),
# and SPIRE_BAND (tile rows per band), SPIRE_SPIRV_DONT_UNROLL=1, SPIRE_MMA_MIDWAIT=n (set them around the script). SPECS: "tm,tn,tk,wm,wn,stages,unroll:EXP:ABLATE"
# or "stages:EXP:ABLATE" for 128x256x16 of 2 x 4 subgroups. Pack spire_bench_matmul into .gpu/bin;
# there: tar xJf .gpu/pack.tar.xz -C .gpu; carry .gpu and .gl.
set -uo pipefail
source tools/gpu/env.sh
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); drv="NVIDIA $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
n=${N:-8192}
for spec in ${SPECS:-"3:-" "3:virt=1" "3:phys=2" "3:phys=2,virt=1" "4:phys=2,virt=1" "4:phys=2" "5:phys=2,virt=1"}; do
  IFS=: read t exp abl <<< "$spec"; [ "$exp" = "-" ] && exp=""
  case $t in *,*) IFS=, read tm tn tk wm wn st un <<< "$t";; *) tm=128 tn=256 tk=16 wm=2 wn=4 st=$t un=$t;; esac
  cfg="tile_m=$tm,tile_n=$tn,tile_k=$tk,warps_m=$wm,warps_n=$wn,stages=$st,unroll=$un"
  f=/tmp/cache_x.tsv
  printf "# spire tuning cache 1\nvulkan\t$dev\t$drv\tmatmul\tm${n}_k${n}_n${n}_abf16_bbf16\tf32\t$cfg\t1\t1\n" > $f
  printf "%-44s" "${tm}x${tn}x${tk} w${wm}x${wn} s$st u$un ${exp:-base} ${abl:-}"
  for rep in 1 2 3; do
    r=$(SPIRE_MMA_ABLATE=${abl:-} SPIRE_MMA_EXP=$exp SPIRE_VULKAN_PIPELINE_STATS=1 timeout 120 $B/spire_bench_matmul --device vulkan:0 --runs 30 --shapes $n --dtype bf16 --tuning-cache $f 2>&1)
    ms=$(echo "$r" | awk '/^vulkan:0 +[0-9]/{print $4 ($8=="tuned" ? "" : "!")}')
    printf "%10s" "${ms:-fail}"
    [ $rep = 1 ] && regs=$(echo "$r" | grep -oE "mma_f32[^']*': CS: Register Count = [0-9]+, Binary Size = [0-9]+" | grep -oE "[0-9]+, B.*" | sed 's/, Binary Size = /, code /' | head -1) && bad=$(echo "$r" | grep -c exceeds)
  done
  echo "   regs ${regs:-?} wrong ${bad:-?}"
done
