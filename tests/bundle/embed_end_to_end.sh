#!/usr/bin/env bash
# The embedding tutorial end to end, as an application would do it (issue 8):
#   install spire into a temporary prefix; build examples/embed against it with find_package(spire);
#   export resnet18 with a dynamic batch; spire compile it for SPIR-V and PTX with batches up to 8;
#   run embed_demo at batches 1, 3 and 8 on the default device and compare with `spire run` of the .onnx
#   (1e-5 relative) and with PyTorch (1e-4); --profile-startup names every phase within the total (embed_demo and
#   spire run); kernels loaded on one thread or several give identical outputs; `spire run` of the bundle with
#   --bench; truncated bundles are refused; check what libspire_runtime.so links.
# usage: embed_end_to_end.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
build=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
spire=$build/bin/spire

echo "== install into $work/prefix"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
lib=$(find "$work/prefix" -name libspire_runtime.so.1.0.0 | head -1)
test -f "$lib" && test -f "$work/prefix/include/spire/spire.h"
echo "== ldd $lib: no compiler inside"
ldd "$lib"
if ldd "$lib" | grep -Ei "spirv|glslang|shaderc|onnx|protobuf|libcuda|nvrtc"; then
  echo "FAIL: libspire_runtime.so links a compiler, ONNX or CUDA library"; exit 1
fi
if nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^spire_' | grep -q .; then
  echo "FAIL: libspire_runtime.so exports more than the C API:"; nm -D --defined-only "$lib" | grep -v ' spire_' | head; exit 1
fi
echo "size: $(stat -c %s "$lib") bytes ($(strip -o "$work/stripped.so" "$lib" && stat -c %s "$work/stripped.so") stripped)"

echo "== build examples/embed against the installed package"
cmake -S "$src/examples/embed" -B "$work/embed-build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/embed-configure.log"
cmake --build "$work/embed-build" > "$work/embed-build.log"
demo=$work/embed-build/embed_demo

echo "== export resnet18 (dynamic batch) and compile it"
/usr/bin/python3 "$src/tests/bundle/export_torchvision.py" "$work/models"
"$spire" compile "$work/models/resnet18.onnx" -o "$work/resnet18.spire" --dynamic-batch --batch 8 --targets spirv,ptx 2>/dev/null

for b in 1 3 8; do
  echo "== batch $b"
  # As an app without a CUDA toolkit would run it: nothing of CUDA on the paths.
  env PATH=/usr/bin:/bin LD_LIBRARY_PATH= "$demo" "$work/resnet18.spire" "$work/models/in_b$b.safetensors" "$work/demo_b$b.safetensors"
  "$spire" run "$work/models/resnet18.onnx" --inputs "$work/models/in_b$b.safetensors" --outputs "$work/onnx_b$b.safetensors"
  echo -n "embed_demo vs spire run of the .onnx: "
  /usr/bin/python3 "$src/tests/bundle/compare_outputs.py" "$work/demo_b$b.safetensors" "$work/onnx_b$b.safetensors" 1e-5
  echo -n "embed_demo vs PyTorch: "
  /usr/bin/python3 "$src/tests/bundle/compare_outputs.py" "$work/demo_b$b.safetensors" "$work/models/torch_b$b.safetensors" 1e-4
done

# lavapipe compiles every shader again in each process (4-16 s a resnet18 run), so each run below checks two things.
echo "== where the start-up goes, every phase named within the total; kernels loaded on one thread give the bits of several"
"$demo" --profile-startup "$work/resnet18.spire" "$work/models/in_b1.safetensors" "$work/profiled_b1.safetensors" \
  vulkan:0 | tee "$work/startup_demo.txt"
/usr/bin/python3 "$src/tests/bundle/check_startup_profile.py" "$work/startup_demo.txt" vulkan
grep -Eq "kernels loaded .*[2-9] threads" "$work/startup_demo.txt" || { echo "FAIL: the kernels did not load in parallel"; exit 1; }
SPIRE_LOAD_THREADS=1 "$demo" "$work/resnet18.spire" "$work/models/in_b1.safetensors" "$work/threads1_b1.safetensors" \
  vulkan:0 > /dev/null
cmp "$work/threads1_b1.safetensors" "$work/profiled_b1.safetensors"
echo "serial and parallel loads: identical outputs"

echo "== spire run of the bundle: the same values, --bench's device and wall times, and its start-up profile"
"$spire" run "$work/resnet18.spire" --inputs "$work/models/in_b1.safetensors" --outputs "$work/run_b1.safetensors" \
  --device vulkan:0 --bench 1 --profile-startup | tee "$work/bench.txt"
grep -q "wall ms" "$work/bench.txt"
/usr/bin/python3 "$src/tests/bundle/check_startup_profile.py" "$work/bench.txt" vulkan
echo -n "spire run of the bundle vs embed_demo: "
/usr/bin/python3 "$src/tests/bundle/compare_outputs.py" "$work/run_b1.safetensors" "$work/demo_b1.safetensors" 1e-6

echo "== a bad bundle gives a status, not a crash"
head -c 1000 "$work/resnet18.spire" > "$work/truncated.spire"
if "$demo" "$work/truncated.spire" "$work/models/in_b1.safetensors" "$work/bad.safetensors" 2> "$work/bad.err"; then
  echo "FAIL: a truncated bundle ran"; exit 1
fi
cat "$work/bad.err"
grep -q "truncated spire bundle" "$work/bad.err"
# Cut after the header, mid-weights: the mapped file is refused by its length before a payload byte is read.
head -c $(( $(stat -c %s "$work/resnet18.spire") / 2 )) "$work/resnet18.spire" > "$work/half.spire"
if "$demo" "$work/half.spire" "$work/models/in_b1.safetensors" "$work/bad.safetensors" 2> "$work/half.err"; then
  echo "FAIL: a bundle cut in half ran"; exit 1
fi
cat "$work/half.err"
grep -q "truncated spire bundle: its header promises" "$work/half.err"
echo "embed end to end: ok"
