#!/usr/bin/env bash
# Issue 10, item 6, on the GPU machine: the workgroup-reduction tests (subgroup path and tree agree bit for bit with
# the documented order), softmax and cross-entropy, and every op of the op harness on cuda:0 and vulkan:0; then the
# reduction workloads of benchmarks/torch_reductions.py timed with subgroup shuffles and without them
# (SPIRE_MASK_FEATURES=subgroup-shuffle), next to PyTorch, and the two runs' outputs compared byte for byte.
# Pack first: EXTRA_TARGETS="spire_lowering_heavy_tests" bash tools/gpu/prepare.sh, then delete the test binaries
# this script does not run from .gpu/bin.
set -uo pipefail
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
echo "== workgroup reductions, softmax, cross-entropy, templates (validation layer on)"
SPIRE_VULKAN_VALIDATION=1 $B/spire_lowering_heavy_tests --gtest_filter='*WorkgroupReduce*:*Softmax*:*CrossEntropy*:*Template*' \
  --gtest_brief=1 2>&1 | tail -4
for dev in cuda:0 vulkan:0; do
  echo "== spire test-ops --device $dev"
  $B/spire test-ops --device $dev 2>&1 | tail -2
done
dir=/tmp/reductions
python3 benchmarks/torch_reductions.py $dir 2>&1 | tee $OUT/torch_reductions.txt
printf "%-32s %-9s %12s %12s  %s\n" workload device "shuffles ms" "tree ms" "outputs" | tee $OUT/spire_reductions.txt
for g in $dir/*.graph; do
  n=$(basename $g .graph)
  for dev in cuda:0 vulkan:0; do
    ms=()
    for mask in none subgroup-shuffle; do
      out=/tmp/out_${n}_${dev/:/}_$mask.safetensors
      t=$(SPIRE_MASK_FEATURES=$([ $mask = none ] && echo "" || echo $mask) $B/spire run $g --inputs $dir/$n.inputs.safetensors \
          --outputs $out --device $dev --bench 100 2>&1 | awk -v d=$dev '$1 == d {print $3}')
      ms+=("${t:-error}")
    done
    same=$(cmp -s /tmp/out_${n}_${dev/:/}_none.safetensors /tmp/out_${n}_${dev/:/}_subgroup-shuffle.safetensors && echo "same bytes" || echo "DIFFER")
    printf "%-32s %-9s %12s %12s  %s\n" $n $dev ${ms[0]} ${ms[1]} "$same" | tee -a $OUT/spire_reductions.txt
  done
done
echo "== LeNet's training step at batch 8192, with shuffles and without"
for mask in "" subgroup-shuffle; do
  echo "-- SPIRE_MASK_FEATURES='$mask'"
  SPIRE_MASK_FEATURES=$mask $B/spire_bench_lenet_step --device all --batch 8192 --runs 30 --top 4 2>&1 | tail -14
done
