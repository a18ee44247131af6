#!/usr/bin/env bash
# The main job: installs what is missing, builds the `spire` CLI (nothing else), lists the devices, checks the
# example kernels on the best device, and trains LeNet on Fashion-MNIST there (5 epochs, batch 64, lr 0.05,
# momentum 0.9).
# With no GPU the best device is lavapipe, Mesa's CPU Vulkan driver, which is far slower: there the job
# trains on the first 10000 images for 1 epoch (a few minutes on 2 cores) unless arguments are given.
# Arguments go to `spire train lenet` (e.g. --device cuda:0 --epochs 5 --save lenet.safetensors).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/tools/install-deps.sh"
# Only the CLI and what it links: the tests and benchmarks (most of the build) are tools/run-tests.sh's.
"$root/tools/build.sh" --target spire
spire="$root/build/bin/spire"
"$spire" devices
"$spire" examples
if [ $# -gt 0 ]; then
  "$spire" train lenet "$@"
elif "$spire" devices | grep -qE 'type (discrete|integrated|virtual) GPU'; then
  "$spire" train lenet --save "$root/build/lenet.safetensors"
else
  echo "no GPU found: training on lavapipe (CPU) with --limit 10000 --epochs 1; pass arguments to change that"
  "$spire" train lenet --limit 10000 --epochs 1 --save "$root/build/lenet.safetensors"
fi
