#!/usr/bin/env bash
# The foundation rows of docs/PERFORMANCE.md: ReLU over 256 MiB against the copy bandwidth on every device, the cost
# of one more dependent dispatch in a recorded stream and a submit's host round trip (spire_bench_foundation), next
# to PyTorch's copy_ and relu on the same GPU (benchmarks/torch_foundation.py). About a minute.
# Here: bash tools/gpu/prepare.sh. There, carrying .gpu and .gl: bash tools/gpu/run-foundation.sh
set -uo pipefail
source tools/gpu/env.sh
$B/spire_bench_foundation --device all --mib ${MIB:-256} --runs 50 2>&1 | tee $OUT/foundation.txt
python3 benchmarks/torch_foundation.py ${MIB:-256} 2>&1 | tee -a $OUT/foundation.txt
