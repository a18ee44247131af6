#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs the whole suite under ctest on every device
# present (lavapipe when there is no GPU), with the Khronos validation layer on for Vulkan tests.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/tools/install-deps.sh"
"$root/tools/build.sh"
cd "$root/build"
ctest --output-on-failure -j "$(nproc)" --timeout 900
# The parsers that read untrusted files (safetensors, IDX, ONNX models) and the graph text parser run again under
# AddressSanitizer + UBSan (any report fails: -fno-sanitize-recover), in a separate Debug build.
if [ "${SPIRE_SKIP_ASAN:-0}" != "1" ]; then
  cmake -S "$root" -B "$root/build-asan" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSPIRE_ASAN=ON >/dev/null
  cmake --build "$root/build-asan" -j "$(nproc)" --target test_io test_io_tensor_file spire_graph_tests test_onnx_import
  "$root/build-asan/tests/io/test_io" --gtest_brief=1
  "$root/build-asan/tests/io/test_io_tensor_file" --gtest_brief=1
  "$root/build-asan/tests/graph/spire_graph_tests" --gtest_brief=1
  "$root/build-asan/tests/onnx/test_onnx_import" --gtest_brief=1
fi
