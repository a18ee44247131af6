#!/usr/bin/env bash
# The main job: installs what is missing, builds, lists the devices and runs the main workload on the best
# device present (lavapipe when there is no GPU). Extra arguments go to the workload.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/tools/install-deps.sh"
"$root/tools/build.sh"
spire="$root/build/bin/spire"
"$spire" devices
"$spire" examples "$@"
