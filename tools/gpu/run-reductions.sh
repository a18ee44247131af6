#!/usr/bin/env bash
# The reduction rows of docs/PERFORMANCE.md: the workloads of benchmarks/torch_reductions.py (softmax over attention
# rows, log_softmax over a classifier's, sum and max over rows, a mean of 16M elements) through `spire run --bench 100`
# on cuda:0 and vulkan:0, with subgroup shuffles and with the shared-memory tree (SPIRE_MASK_FEATURES=subgroup-shuffle),
# next to PyTorch in the same run, and the two runs' outputs compared byte for byte (the reductions' fixed order).
# TESTS=1 first runs the workgroup-reduction, softmax and cross-entropy tests with the validation layer on (pack with
# TESTS=1).
# Here: bash tools/gpu/prepare.sh. There, carrying .gpu and .gl: bash tools/gpu/run-reductions.sh
set -uo pipefail
source tools/gpu/env.sh
if [ "${TESTS:-0}" = 1 ]; then
  SPIRE_VULKAN_VALIDATION=1 $B/spire_lowering_heavy_tests --gtest_filter='*WorkgroupReduce*:*Softmax*:*CrossEntropy*:*Template*' \
    --gtest_brief=1 2>&1 | tail -4
fi
dir=/tmp/reductions
python3 benchmarks/torch_reductions.py $dir 2>&1 | tee $OUT/torch_reductions.txt
printf "%-32s %-9s %12s %12s  %s\n" workload device "shuffles ms" "tree ms" "outputs" | tee $OUT/spire_reductions.txt
for g in $dir/*.graph; do
  n=$(basename $g .graph)
  for dev in cuda:0 vulkan:0; do
    ms=()
    for mask in none subgroup-shuffle; do
      out=/tmp/out_${n}_${dev/:/}_$mask.safetensors
      t=$(SPIRE_MASK_FEATURES=$([ $mask = none ] || echo $mask) $B/spire run $g --inputs $dir/$n.inputs.safetensors \
          --outputs $out --device $dev --bench 100 2>&1 | awk -v d=$dev '$1 == d {print $3}')
      ms+=("${t:-error}")
    done
    same=$(cmp -s /tmp/out_${n}_${dev/:/}_none.safetensors /tmp/out_${n}_${dev/:/}_subgroup-shuffle.safetensors && echo "same bytes" || echo "DIFFER")
    printf "%-32s %-9s %12s %12s  %s\n" $n $dev ${ms[0]} ${ms[1]} "$same" | tee -a $OUT/spire_reductions.txt
  done
done
