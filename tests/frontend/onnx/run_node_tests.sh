#!/usr/bin/env bash
# ONNX backend node tests through `spire onnx-test`: one of select_node_tests.py's sets (SET: targeted, the
# default, the tests whose ops are all in the importer's target list; typed, every test of float32, int32, int64
# and bool tensors) on DEVICE. Passes when at least MIN pass and no failure is a wrong result: every failure must
# be a refusal at import, never a mismatch of numbers, dtypes or shapes.
# Usage: run_node_tests.sh SPIRE DEVICE MIN [SET]
set -uo pipefail
spire=$1 device=$2 min=$3 set=${4:-targeted}
here=$(cd "$(dirname "$0")" && pwd)
data=/usr/share/libonnx-testdata/data/node
[ -d "$data" ] || { echo "libonnx-testdata is not installed (tools/install-deps.sh installs it)"; exit 1; }
mapfile -t dirs < <(/usr/bin/python3 "$here/select_node_tests.py" --set "$set" "$data")
out=$("$spire" onnx-test "${dirs[@]}" --device "$device" 2>&1)
echo "$out" | tail -1
# Tests whose own expected data contradict their model (select_node_tests.py says why) fail without counting as
# wrong results; any other mismatch does.
contradicted=$(/usr/bin/python3 "$here/select_node_tests.py" --contradicted | sed 's/^/^FAIL /; s/$/:/')
wrong=$(echo "$out" | grep '^FAIL' | grep -E 'differs at element|but the test expects|no output' |
        grep -v -f <(echo "$contradicted") || true)
if [ -n "$wrong" ]; then echo "wrong results:"; echo "$wrong"; exit 1; fi
passed=$(echo "$out" | grep -c '^PASS')
[ "$passed" -ge "$min" ] || { echo "only $passed passed (expected at least $min)"; echo "$out" | grep '^FAIL'; exit 1; }
