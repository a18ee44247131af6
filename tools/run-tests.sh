#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs the whole suite under ctest on every device
# present (lavapipe when there is no GPU), with the Khronos validation layer on for Vulkan tests.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/tools/install-deps.sh"
"$root/tools/build.sh"
cd "$root/build"
ctest --output-on-failure -j "$(nproc)" --timeout 900
# The parsers that read untrusted files run again under AddressSanitizer + UBSan.
if [ "${SPIRE_SKIP_ASAN:-0}" != "1" ]; then
  cmake -S "$root" -B "$root/build-asan" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSPIRE_ASAN=ON >/dev/null
  asan_targets=$(cd "$root/build-asan" && ninja -t targets all | grep -oE '^spire_(io|nn|graph)_tests' | sort -u || true)
  if [ -n "$asan_targets" ]; then
    cmake --build "$root/build-asan" -j "$(nproc)" --target $asan_targets
    cd "$root/build-asan" && ctest --output-on-failure -j "$(nproc)" -R "^(Safetensors|Idx)" --timeout 900
  fi
fi
