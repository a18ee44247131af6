#!/usr/bin/env bash
# Configures and builds spire into build/ (Release with debug info).
#   tools/build.sh                         everything: libraries, the CLI, tests, benchmarks, examples
#   tools/build.sh --target spire [...]    only these targets and what they depend on (repeatable)
# Other arguments go to CMake's configure step. When ccache is on PATH it wraps the compilers, so a rebuild
# after a clean or in a second checkout reuses earlier compilations; without it nothing changes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
targets=()
cmake_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --target) [ $# -ge 2 ] || { echo "tools/build.sh: --target needs a name" >&2; exit 2; }
              targets+=("$2"); shift 2 ;;
    *) cmake_args+=("$1"); shift ;;
  esac
done
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
elif grep -qs '^CMAKE_CXX_COMPILER_LAUNCHER.*=ccache$' "$root/build/CMakeCache.txt"; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER= -DCMAKE_CXX_COMPILER_LAUNCHER=)  # ccache was removed since
fi
# The caller's own arguments come last, so a launcher given there wins.
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${launcher[@]+"${launcher[@]}"} \
  ${cmake_args[@]+"${cmake_args[@]}"} >/dev/null
if [ ${#targets[@]} -gt 0 ]; then
  cmake --build "$root/build" -j "$(nproc)" --target "${targets[@]}"
else
  cmake --build "$root/build" -j "$(nproc)"
fi
