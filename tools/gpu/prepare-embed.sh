#!/usr/bin/env bash
# Packs what tools/gpu/run-embed.sh needs into .gpu/ (carried with .gl/): the CLI, libspire_runtime.so and
# examples/embed's embed_demo built against an installed spire, all stripped.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
cmake --build build -j2 --target spire spire_runtime_shared test_bundle_app_vulkan
rm -rf .gpu /tmp/spire-embed-prefix /tmp/spire-embed-build && mkdir -p .gpu/bin .gpu/lib
cmake --install build --prefix /tmp/spire-embed-prefix > /dev/null
cmake -S examples/embed -B /tmp/spire-embed-build -G Ninja -DCMAKE_PREFIX_PATH=/tmp/spire-embed-prefix > /dev/null
cmake --build /tmp/spire-embed-build > /dev/null
cp build/bin/spire /tmp/spire-embed-build/embed_demo build/tests/bundle/test_bundle_app_vulkan .gpu/bin/
cp -d /tmp/spire-embed-prefix/lib/libspire_runtime.so* .gpu/lib/
strip .gpu/bin/* .gpu/lib/libspire_runtime.so.1.0.0
du -sh .gpu
