#!/usr/bin/env bash
# Installs the Debian 12 packages spire builds and runs with, only those missing. Needs root (or sudo).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git lld
  libvulkan-dev libvulkan-volk-dev vulkan-validationlayers vulkan-tools mesa-vulkan-drivers
  spirv-headers spirv-tools glslang-dev glslc libshaderc-dev
  libfmt-dev nlohmann-json3-dev libcli11-dev libgtest-dev zlib1g-dev
  python3 python3-dev pybind11-dev python3-pytest
  dataset-fashion-mnist
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata python3-torch python3-torchvision python3-onnx python3-numpy
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
