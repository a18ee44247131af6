#!/usr/bin/env bash
# The correctness checks that need the GPU machine (the test command runs on lavapipe and the mock CUDA driver):
# PARTS (space-separated, default "devices ops reference"; each part a few minutes at most):
#   devices     spire devices, the example kernels on every device, the examples' and the runtime conformance suites
#               with the validation layer on, the CUDA and Vulkan suites, what the Vulkan driver offers
#               (tools/gpu/vulkan_query.py: cooperative matrices, memory types)
#   ops         spire test-ops on every device, with the f16/bf16 rows counted
#   reference   PyTorch's float64 LeNet (logits, loss, every parameter gradient) against spire's float64 evaluator
#               (spire lenet export --dtype f64, spire graph eval)
#   onnx        ONNX's node tests of the counted and typed sets on the reference, cuda:0 and vulkan:0 (docs/CONFORMANCE.md), and
#               the imported encoder layer's parameter gradients against float64 (pack with ONNX=1)
#   custom-ops  the seed LeNet trained with the seed's ReLU as a custom op (GLSL on vulkan:0, kernel builder on both)
#               next to the built-in one; the example ops on every device; seed 001's SiLU MLP through --ops
#   kernels     the kernel tests the GPU exercises most (tensor-core matmuls and convolutions, TF32 ones and the
#               precision policy, packed products, Winograd, every tuning candidate, streamed values, the trainer), on
#               cuda:0 and vulkan:0, without the
#               validation layer (Debian's predates the cooperative-matrix extensions); FILTER narrows the heavy
#               kernels' filter (pack with TESTS=1)
#   diff        the planted faults (tests/diff/planted_faults_test.cpp: a wrong element, a NaN, a wrong config forced
#               through the tuning cache) named and reduced on cuda:0 and vulkan:0 (pack with TESTS=test_diff); spire
#               diff --devices all on resnet50 (torchvision, random weights, seed 0, exported there) at batch
#               DIFF_BATCH (default 32): wall time, peak host memory and the device's peak (nvidia-smi) next to a plain
#               spire run on each device (docs/DIFF.md); and a small CNN's `spire diff --save` into $OUT/saved with
#               the model and its inputs (8 files: the part writes nothing else to $OUT), for `--against` on
#               another machine
# Here: bash tools/gpu/prepare.sh (TESTS=1, ONNX=1 as the parts need). There, carrying .gpu and .gl:
# PARTS="devices ops" bash tools/gpu/run-checks.sh. Outputs in $OUT.
set -uo pipefail
source tools/gpu/env.sh
D=.gpu/data
summary='^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure'
for part in ${PARTS:-devices ops reference}; do
  echo "======== $part"
  case $part in
  devices)
    $B/spire devices
    $B/spire examples --device all 2>&1 | tee $OUT/examples.txt | tail -5
    SPIRE_VULKAN_VALIDATION=1 $B/spire_examples_tests --gtest_brief=1 2>&1 | tail -3
    SPIRE_VULKAN_VALIDATION=1 $B/spire_runtime_conformance_tests --gtest_brief=1 2>&1 | tail -3
    $B/spire_cuda_tests --gtest_brief=1 2>&1 | tail -3
    SPIRE_VULKAN_TEST_DEVICE=0 $B/spire_vulkan_tests --gtest_brief=1 2>&1 | tail -3
    python3 tools/gpu/vulkan_query.py coopmat memory 2>&1 | tee $OUT/vulkan_query.txt | grep -E "^==|16x16x16|heap|DEVICE_LOCAL.HOST_VISIBLE"
    ;;
  ops)
    for dev in cuda:0 vulkan:0; do
      f=$OUT/test-ops-${dev/:/}.txt
      timeout 300 $B/spire test-ops --device $dev > $f 2>&1
      echo "$dev: $(tail -1 $f); f16/bf16 rows passed: $(grep -E '^\S+ +b?f16\[' $f | grep -c ' pass')"
      grep -E "FAIL" $f | head -10
    done
    ;;
  reference)
    python3 tools/gpu/torch_lenet_reference.py make /tmp/ref_in.safetensors /tmp/ref_out.safetensors --batch 8 --seed 0
    $B/spire lenet export --batch 8 --dtype f64 -o /tmp/lenet8.graph
    $B/spire graph eval /tmp/lenet8.graph --inputs /tmp/ref_in.safetensors --outputs /tmp/spire_out.safetensors --dtype f64
    python3 tools/gpu/torch_lenet_reference.py compare /tmp/ref_out.safetensors /tmp/spire_out.safetensors | tee $OUT/reference.txt
    ;;
  onnx)
    mapfile -t dirs < <(ls -d .gpu/node/*/)
    echo "${#dirs[@]} node tests"
    for dev in reference cuda:0 vulkan:0; do
      f=$OUT/node_${dev/:/}.txt
      $B/spire onnx-test "${dirs[@]}" --device $dev > $f 2>&1
      echo "$dev: $(tail -1 $f); wrong results: $(grep '^FAIL' $f | grep -cE 'differs at element|but the test expects|no output')"
      [ -f .gpu/node_typed.txt ] &&
        echo "$dev, the typed set: $(grep -o '^PASS test_[a-z0-9_A-Z]*' $f | cut -d' ' -f2 | grep -cxFf .gpu/node_typed.txt) of $(wc -l < .gpu/node_typed.txt) pass"
    done
    diff <(grep -o '^[A-Z]* test_[a-z0-9_]*' $OUT/node_cuda0.txt) <(grep -o '^[A-Z]* test_[a-z0-9_]*' $OUT/node_vulkan0.txt) \
      && echo "the same pass/fail set on cuda:0 and vulkan:0"
    for dev in cuda:0 vulkan:0; do
      $B/spire graph eval .gpu/grad/grad.graph --inputs .gpu/grad/feed.safetensors --outputs /tmp/grad_${dev/:/}.safetensors --device $dev
    done
    python3 tools/gpu/check_outputs.py grads .gpu/grad/ref.safetensors /tmp/grad_cuda0.safetensors /tmp/grad_vulkan0.safetensors
    ;;
  custom-ops)
    for run in "vulkan:0 custom" "vulkan:0 custom-builder" "cuda:0 custom-builder" "cuda:0 builtin" "vulkan:0 builtin"; do
      set -- $run
      echo "== train lenet --device $1 --relu $2"
      timeout 200 $B/spire train lenet --device $1 --relu $2 --data $D 2>&1 | grep -E "^(ReLU|device|compiled|epoch [0-9]:)"
    done
    echo "== the GLSL op on cuda:0 (refused by name)"
    timeout 60 $B/spire train lenet --device cuda:0 --relu custom --data $D --epochs 1 2>&1 | tail -1
    echo "== test-ops --ops examples/custom_ops --device all"
    timeout 200 $B/spire test-ops --ops examples/custom_ops --device all > $OUT/test-ops-custom.txt 2>&1
    grep -E "^seed_" $OUT/test-ops-custom.txt | grep -v " pass$" | head -5
    echo "rows passed: $(grep -cE '^seed_.* pass$' $OUT/test-ops-custom.txt)"
    echo "== SiLU MLP: graph grad --ops, graph eval on the reference, vulkan:0 (GLSL) and cuda:0 (refused)"
    $B/spire graph grad --ops examples/custom_ops/seed_silu.op examples/custom_ops/silu_mlp.graph --loss loss --parameters \
      -o /tmp/mlp.graph 2>&1 | tail -1
    for dev in reference vulkan:0 cuda:0; do
      flag=""; [ $dev != reference ] && flag="--device $dev"
      $B/spire graph eval --ops examples/custom_ops/seed_silu.op /tmp/mlp.graph --inputs .gpu/mlp_in.safetensors \
        --outputs /tmp/mlp_${dev/:/}.safetensors $flag 2>&1 | tail -1
    done
    python3 tools/gpu/check_outputs.py maxnorm /tmp/mlp_reference.safetensors /tmp/mlp_vulkan0.safetensors
    ;;
  kernels)
    export SPIRE_EXPECT_COOPERATIVE_MATRIX=1
    timeout 400 $B/spire_lowering_heavy_tests --gtest_filter="${FILTER:-*Mma*:*MatmulPacked*:*ChannelsLast*:*Conv2d*:*SplitSum*:*Tf32*}" \
      2>&1 | grep -E "$summary" | tail -20
    timeout 300 $B/spire_lowering_tests --gtest_filter='*HalfConv2d*:*ComputeInF32*:*Streamed*:*GradInputPhases*:*SiluMlpBf16*:*PrecisionPolicy*' \
      2>&1 | grep -E "$summary" | tail -10
    timeout 300 $B/spire_tuning_tests --gtest_filter='*EveryCandidate*:*WinogradPrecision*:TunedLowering.*:*TuneFlow*' \
      2>&1 | grep -E "$summary|^(vulkan|cuda):0 layer" | tail -30
    SPIRE_TEST_FASHION_MNIST=$D timeout 300 $B/spire_training_tests 2>&1 | grep -E "$summary" | tail -5
    unset SPIRE_EXPECT_COOPERATIVE_MATRIX
    ;;
  diff)
    $B/test_diff --gtest_filter='*PlantedFault*' 2>&1 | grep -E "^\[ +(OK|FAILED) |$summary"
    batch=${DIFF_BATCH:-32}
    python3 - $batch <<'PY'
import sys, torch, torchvision
sys.path.insert(0, "tools/gpu")
from safetensors_io import write_safetensors
torch.manual_seed(0)
m, x = torchvision.models.resnet50().eval(), torch.randn(int(sys.argv[1]), 3, 224, 224)
torch.onnx.export(m, (x,), "/tmp/r50.onnx", input_names=["x"], output_names=["y"], opset_version=13, dynamo=False)
write_safetensors("/tmp/r50.in.safetensors", {"x": x.numpy()})
PY
    # The device's peak while a command runs: nvidia-smi's used memory every 50 ms.
    gpu_peak() {
      nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 50 < /dev/null > /tmp/smi.txt 2>/dev/null &
      local smi=$!
      "$@"
      kill $smi 2>/dev/null; wait $smi 2>/dev/null
      echo "  device memory used at peak: $(sort -n /tmp/smi.txt | tail -1) MiB (nvidia-smi)"
    }
    for d in cuda:0 vulkan:0; do
      gpu_peak /usr/bin/time -f "spire run $d, batch $batch: %e s wall, %M KB peak host memory" $B/spire run /tmp/r50.onnx \
        --inputs /tmp/r50.in.safetensors --outputs /tmp/o.safetensors --device $d 2>&1 | grep -E "wall|memory used"
    done
    gpu_peak /usr/bin/time -f "spire diff --devices all, batch $batch: %e s wall, %M KB peak host memory" $B/spire diff \
      /tmp/r50.onnx --inputs /tmp/r50.in.safetensors --devices all --json /tmp/diff_resnet50.json 2>&1 |
      grep -E "wall|memory used|against|first divergence|note"
    mkdir -p $OUT/saved
    python3 - $OUT/saved <<'PY'
import sys, torch
sys.path.insert(0, "tools/gpu")
from safetensors_io import write_safetensors
torch.manual_seed(3)
m = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
                        torch.nn.MaxPool2d(2), torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(),
                        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 10), torch.nn.Softmax(1)).eval()
x = torch.randn(4, 3, 32, 32)
torch.onnx.export(m, (x,), sys.argv[1] + "/cnn.onnx", input_names=["x"], output_names=["y"], opset_version=13, dynamo=False)
write_safetensors(sys.argv[1] + "/cnn.in.safetensors", {"x": x.numpy()})
PY
    $B/spire diff $OUT/saved/cnn.onnx --inputs $OUT/saved/cnn.in.safetensors --devices all --save $OUT/saved 2>&1 | tail -4
    ls -la $OUT/saved
    ;;
  *) echo "unknown part '$part'"; exit 2 ;;
  esac
done
