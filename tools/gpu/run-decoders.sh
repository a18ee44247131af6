#!/usr/bin/env bash
# A decoder LLM of tests/decoders/decoder_models.py (default GPT-2 124M, random weights, exported there by its torch)
# through `spire generate` on cuda:0 and vulkan:0: a 32-token prompt, NEW new tokens (default 256), f32, the tokens
# compared with PyTorch's greedy ones (CPU, f32). Options (environment): CONFIG (a decoder_models.py config), NEW.
# Here: tools/build.sh --target spire; a pack of the CLI alone is enough:
#   p=$(mktemp -d); mkdir $p/bin; cp build/bin/spire $p/bin; strip $p/bin/spire; mkdir -p .gpu
#   tar cJf .gpu/pack.tar.xz -C $p .
# and .gl/ with libvulkan1, libfmt9, libonnx1 and libprotobuf32 (apt-get download). There, carrying .gpu and .gl:
#   bash tools/gpu/run-decoders.sh
# Not run yet: the device tool carries the main checkout, and this script came from a worktree.
set -uo pipefail
source tools/gpu/env.sh
config=${CONFIG:-gpt2-124m}
new=${NEW:-256}
M=/tmp/decoders
mkdir -p $M
prompt=$(python3 -c "import sys; sys.path.insert(0, 'tests/decoders'); import decoder_models as d
v = d.CONFIGS['$config'].vocab; print(','.join(str(i * 7919 % v) for i in range(1, 33)))")
t0=$(date +%s)
python3 tests/decoders/decoder_models.py onnx $config $M/$config.onnx 2>&1 | grep -v Warn | tail -3
echo "export: $(( $(date +%s) - t0 )) s"
python3 tests/decoders/decoder_models.py greedy $config $prompt $new 2>&1 | grep -v Warn | tail -1 > $OUT/torch_tokens.txt
for d in cuda:0 vulkan:0; do
  echo "== $config on $d"
  $B/spire generate $M/$config.onnx --prompt-ids $prompt --max-new-tokens $new --device $d 2>&1 | tee $OUT/spire_$d.txt
  python3 - $OUT/torch_tokens.txt $OUT/spire_$d.txt <<'PY'
import sys
want = open(sys.argv[1]).read().strip().split(",")
got = next((l[8:].strip().split(",") for l in open(sys.argv[2]) if l.startswith("tokens: ")), [])
same = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b), min(len(want), len(got)))
print(f"tokens equal to PyTorch's: the first {same} of {len(want)}" + (" (all)" if same == len(want) == len(got) else ""))
PY
done
