#!/usr/bin/env bash
# The LeNet rows of docs/PERFORMANCE.md (the seed article's LeNet: SGD with momentum, heuristic configs unless a part
# forces others). PARTS (space-separated, default "step train"):
#   step      the training step at BATCHES (default "64 8192") on both backends (spire_bench_lenet_step: device time,
#             launches, barriers) next to PyTorch eager and torch.compile (benchmarks/torch_lenet_step.py; TORCH=0
#             skips it); with a BEFORE build in the pack (prepare.sh BEFORE=...), `spire lenet bench` of both builds
#             interleaved, fresh processes, two rounds
#   train     5 epochs at batch 64 on cuda:0 and vulkan:0 (seconds per epoch, test accuracy), each device's weights
#             evaluated on the other, and PyTorch eager with the same recipe (tools/gpu/torch_lenet_train.py)
#   loop      the trainer's loop without its data preparation (spire_bench_lenet_step --loop: the host's feed, submit
#             and wait per step against wall and device time), with the minibatch written in place and forced through
#             a staging copy (SPIRE_VULKAN_FORCE_STAGING=1); then epochs with 1 and 2 steps in flight, REPS rounds
#   profile   every launch of the step at batch 8192, longest first (spire lenet bench --profile)
#   configs   the step at batch 8192 with single kernels' configs forced, one tuning-cache line each: CONFIGS holds
#             "op/shape=config" items, e.g. conv2d_grad_weight/n8192_c6_h14_w14_k16_r5x5_s1x1_p2x2_d1x1_g1=block_rows=5,...
#             (the first convolution: n8192_c1_h28_w28_k6_...; pooled forms append their suffix to the shape, e.g.
#             _pooled_k2x2_relu_argmax); the forced kernel's launch and the unprofiled step, twice each
#   tune      `spire lenet bench --batch 8192 --tune` from an empty cache, then the step with the tuned cache and with
#             the heuristics, fresh processes (the caches come back in $OUT)
#   ncu       Nsight Compute on the heaviest kernels at batch 8192 on cuda:0 (KERNELS: kernel-name regexes)
# Here: bash tools/gpu/prepare.sh. There, carrying .gpu and .gl: PARTS="step train" bash tools/gpu/run-lenet.sh
set -uo pipefail
source tools/gpu/env.sh
D=.gpu/data
batches=${BATCHES:-64 8192}
step_ms() {  # binary device batch [args...]: the median step of `spire lenet bench`
  local bin=$1 dev=$2 b=$3; shift 3
  $B/$bin lenet bench --batch $b --device $dev --runs 30 "$@" 2>&1 | grep -E "^$dev " | awk '{print $3}'
}
cache_file /tmp/none.tsv < /dev/null
for part in ${PARTS:-step train}; do
  echo "======== $part"
  case $part in
  step)
    for b in $batches; do
      $B/spire_bench_lenet_step --device all --batch $b --runs 30 --top ${TOP:-0} 2>&1 | tee $OUT/lenet_step_b$b.txt
    done
    if [ -x $B/spire_before ]; then
      for round in 1 2; do for b in $batches; do for dev in cuda:0 vulkan:0; do for bin in spire_before spire; do
        echo "round $round b$b $dev $bin $(step_ms $bin $dev $b)"
      done; done; done; done | tee $OUT/lenet_before_after.txt
    fi
    [ "${TORCH:-1}" = 1 ] && python3 benchmarks/torch_lenet_step.py $batches 2>&1 | grep -v Warn | tee $OUT/torch_lenet_step.txt
    ;;
  train)
    for dev in cuda:0 vulkan:0; do
      tag=${dev/:/}
      timeout 200 $B/spire train lenet --device $dev --data $D --save $OUT/w_$tag.safetensors 2>&1 |
        grep -E "^(device|compiled|epoch [0-9]+:|saved)" | tee $OUT/train_$tag.txt
    done
    echo -n "cuda:0's weights on vulkan:0: "; $B/spire eval lenet --device vulkan:0 --data $D --load $OUT/w_cuda0.safetensors 2>&1 | tail -1
    echo -n "vulkan:0's weights on cuda:0: "; $B/spire eval lenet --device cuda:0 --data $D --load $OUT/w_vulkan0.safetensors 2>&1 | tail -1
    [ "${TORCH:-1}" = 1 ] && timeout 200 python3 tools/gpu/torch_lenet_train.py $D 0 2>&1 | tee $OUT/torch_lenet_train.txt
    ;;
  loop)
    for staging in 0 1; do
      echo "== step loop, SPIRE_VULKAN_FORCE_STAGING=$staging"
      SPIRE_VULKAN_FORCE_STAGING=$staging $B/spire_bench_lenet_step --device all --batch 64 --top 0 --loop ${LOOP:-3000} 2>&1 |
        grep -vE "^ +ms +share"
    done | tee $OUT/loop.txt
    for rep in $(seq 1 ${REPS:-2}); do
      for run in "cuda:0 1 0" "cuda:0 2 0" "vulkan:0 1 0" "vulkan:0 2 0" "vulkan:0 2 1"; do
        set -- $run
        secs=$(SPIRE_VULKAN_FORCE_STAGING=$3 timeout 120 $B/spire train lenet --device $1 --data $D --quiet --steps-in-flight $2 2>&1 |
               grep -E "^epoch [2-9]+:" | sed -E 's/.*, ([0-9.]+) s.*/\1/' | tr '\n' ' ')
        echo "rep $rep $1 steps in flight $2, forced staging $3: s/epoch of epochs 2-5: $secs"
      done
    done | tee $OUT/epochs.txt
    ;;
  profile)
    for dev in ${DEVICES:-cuda:0 vulkan:0}; do
      echo "== $dev, batch 8192: the longest launches (ms, kernel), then the step"
      $B/spire lenet bench --batch 8192 --device $dev --runs 20 --profile --tuning-cache /tmp/none.tsv > /tmp/profile.txt 2>&1
      awk '$2 ~ /^[0-9.]+$/ && NF >= 3' /tmp/profile.txt | sort -k2 -g -r | head -${TOP:-16} | cut -c1-170
      grep -E "^$dev " /tmp/profile.txt
    done | tee $OUT/lenet_profile.txt
    ;;
  configs)
    for dev in ${DEVICES:-cuda:0 vulkan:0}; do
      backend=${dev%%:*}
      echo "$dev heuristics: step $(step_ms spire $dev 8192 --tuning-cache /tmp/none.tsv) $(step_ms spire $dev 8192 --tuning-cache /tmp/none.tsv)"
      for spec in ${CONFIGS:-}; do
        op=${spec%%/*}; rest=${spec#*/}; shape=${rest%%=*}; config=${rest#*=}
        cache_line $backend $op $shape f32 "$config" | cache_file /tmp/one.tsv
        kernel=${shape%%_pooled*}  # kernel names carry no pooled-form suffix
        for run in 1 2; do
          r=$($B/spire lenet bench --batch 8192 --device $dev --runs 20 --profile --tuning-cache /tmp/one.tsv 2>&1 |
              grep -E "_${kernel}|warning" | awk '{printf "%s %s  ", $2, $NF}')
          echo "$dev $spec run $run: step $(step_ms spire $dev 8192 --tuning-cache /tmp/one.tsv) | $r"
        done
      done
    done | tee $OUT/lenet_configs.txt
    ;;
  tune)
    for dev in ${DEVICES:-cuda:0 vulkan:0}; do
      cache=$OUT/tuned_${dev%%:*}.tsv
      cache_file $cache < /dev/null
      echo "== $dev: tuning"
      timeout 280 $B/spire lenet bench --batch 8192 --device $dev --runs 10 --tune --tuning-cache $cache 2>&1 | grep -vE "^\s*$" | tail -40
      for run in 1 2; do
        echo "$dev run $run: heuristics $(step_ms spire $dev 8192 --tuning-cache /tmp/none.tsv) ms, tuned $(step_ms spire $dev 8192 --tuning-cache $cache) ms"
      done
    done
    ;;
  ncu)
    for k in ${KERNELS:-conv2d_grad_input_n8192_c6 conv2d_n8192_c6 conv2d_grad_weight_n8192_c6 matmul_m120_k8192_n784 conv2d_n8192_c1}; do
      echo "== $k"
      timeout 120 /usr/local/cuda/bin/ncu --kernel-name regex:"$k" --launch-count 1 --section LaunchStats --section Occupancy \
        --section SpeedOfLight --section WarpStateStats $B/spire lenet bench --batch 8192 --device cuda:0 --runs 1 2>&1 |
        grep -E "Registers Per Thread|Achieved Occupancy|^    Duration|Compute \(SM\) Throughput|Memory Throughput|Warp Cycles Per Issued|Block Size" |
        sed 's/  */ /g' | head -10
    done
    ;;
  *) echo "unknown part '$part'"; exit 2 ;;
  esac
done
