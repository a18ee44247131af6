#!/usr/bin/env bash
# The imported models of docs/PERFORMANCE.md against PyTorch on the same GPU, in one run: spire run --bench 50 (device
# timestamps) on cuda:0 and vulkan:0 at batch 1 and 64, next to PyTorch eager (strict fp32 and its TF32 default) and
# torch.compile, each output checked against PyTorch's and ONNX Runtime's (tools/gpu/models_table.py). PARTS (default
# "f32 f16"):
#   f32        resnet18 (torchvision, random weights, dynamic batch; exported there by benchmarks/torch_models.py) and
#              the transformer encoder layer at opsets 13 and 17 (exported here by prepare.sh)
#   f16        resnet18 exported from CUDA in float16 (tools/gpu/half_resnet18.py), against PyTorch's float16 eager
#              and torch.compile
#   launches   each model's launches per inference at batch 1 (spire run --profile; with f32 and f16, whose
#              exports it reads)
#   decoders   alone (PARTS=decoders, or PARTS=generate): a decoder LLM of tests/tools/decoders/decoder_models.py
#              (CONFIG, default gpt2-124m, random weights, exported there by its torch) through `spire generate` on
#              cuda:0 and vulkan:0, a 32-token prompt and NEW new tokens (default 256), in each of VARIANTS (default
#              "f32 bf16 int8": --precision f32|bf16, --int8), after --warm-up's 0.5 s of untimed steps (PyTorch's
#              bench generates twice and times the second), its tokens against PyTorch's greedy ones (CPU, f32);
#              then PyTorch on the same GPU and model with a static cache (decoder_models.py bench) in TORCH_DTYPES
#              (default "f32 bf16") and TORCH_MODES (default "eager reduce-overhead": torch.compile's mode), and a
#              table of tokens/s and GB/s side by side; the pack needs the CLI only, and .gl libonnx1 and libprotobuf32.
#              DEVICES narrows the devices (default "cuda:0 vulkan:0"); PROFILE=1 adds an f32 run of 64 tokens with
#              --profile on each (every launch of the decode step, its device time) into profile_<device>.txt (cuda_0, vulkan_0)
#   precision  alone (PARTS=precision): the precision policies of issue 53 (docs/PRECISION.md): resnet18, resnet50,
#              efficientnet_b0, densenet121, mobilenet_v3_small and squeezenet1_1 (torchvision, random weights from seed 0,
#              exported here by its torch; MODELS to change) at batch BATCH
#              (default 32) through `spire run --bench 30 --precision P` for each P of POLICIES (default
#              "fp32 tf32 bf16") on cuda:0 and vulkan:0 (which runs tf32 as fp32 and says so), each output's max-norm error against PyTorch's strict fp32 (float64 for the
#              reference) next to PyTorch eager in strict fp32 and in its TF32 default, and torch.compile (default mode,
#              PyTorch's default TF32; COMPILE=0 leaves it out), then the table of docs/PERFORMANCE.md with each device's
#              best policy over torch.compile; about 4 minutes for the first four models
#   memory     alone (PARTS=memory): issue 53 §5's table: resnet50 (random weights) at batch BATCHES (default "256
#              1024") and a GPT-3-sized MLP product (16384 tokens x 12288 -> 49152, f32 and bf16) through
#              `spire run --stats --bench 3` on cuda:0 and vulkan:0: the plan's device memory (weights, inputs and
#              outputs, arena, the values live at the worst launch) and the process's peak in nvidia-smi, next to
#              PyTorch's max_memory_allocated and its process peak for the same inference (SPIRE=0: PyTorch's alone)
# With a BEFORE build in the pack (prepare.sh BEFORE=...), every table also for spire_before, in the same run.
# SPIRE_RUN_ARGS adds arguments to every `spire run` (e.g. "--tune --tuning-cache /tmp/tc.txt").
# Here: bash tools/gpu/prepare.sh. There, carrying .gpu and .gl: bash tools/gpu/run-models.sh (about 4 minutes).
set -uo pipefail
source tools/gpu/env.sh
if [ "${PARTS:-}" = decoders ] || [ "${PARTS:-}" = generate ]; then
  config=${CONFIG:-gpt2-124m}
  new=${NEW:-256}
  M=/tmp/decoders
  mkdir -p $M
  prompt=$(python3 -c "import sys; sys.path.insert(0, 'tests/tools/decoders'); import decoder_models as d
v = d.CONFIGS['$config'].vocab; print(','.join(str(i * 7919 % v) for i in range(1, 33)))")
  t0=$(date +%s)
  python3 tests/tools/decoders/decoder_models.py onnx $config $M/$config.onnx 2>&1 | grep -v Warn | tail -3
  echo "export: $(( $(date +%s) - t0 )) s"
  python3 tests/tools/decoders/decoder_models.py greedy $config $prompt $new 2>&1 | grep -v Warn | tail -1 > $OUT/torch_tokens.txt
  # How many leading tokens of file $2 (a "tokens: " line) equal PyTorch's greedy f32 ones (CPU).
  same_tokens() {
    python3 - $OUT/torch_tokens.txt "$1" <<'PY'
import sys
want = open(sys.argv[1]).read().strip().split(",")
got = next((l[8:].strip().split(",") for l in open(sys.argv[2]) if l.startswith("tokens: ")), [])
same = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b), min(len(want), len(got)))
print(f"tokens equal to PyTorch's f32 greedy ones: the first {same} of {len(want)}" + (" (all)" if same == len(want) == len(got) else ""))
PY
  }
  for d in ${DEVICES:-cuda:0 vulkan:0}; do
    if [ "${PROFILE:-0}" = 1 ]; then
      $B/spire generate $M/$config.onnx --prompt-ids $prompt --max-new-tokens 64 --device $d --profile --warm-up > $OUT/profile_${d/:/_}.txt 2>&1
      grep -E "tokens/s|decode step|total" $OUT/profile_${d/:/_}.txt
    fi
    for v in ${VARIANTS:-f32 bf16 int8}; do
      flags="--precision $v"
      [ $v = int8 ] && flags=--int8
      echo "== $config on $d, $v"
      $B/spire generate $M/$config.onnx --prompt-ids $prompt --max-new-tokens $new --device $d $flags --warm-up 2>&1 | tee $OUT/spire_${d/:/_}_$v.txt
      same_tokens $OUT/spire_${d/:/_}_$v.txt
    done
  done
  # PyTorch on the same GPU and model: a static cache (decoder_models.py's StaticCacheDecoder), eager and compiled.
  for dt in ${TORCH_DTYPES:-f32 bf16}; do
    for mode in ${TORCH_MODES:-eager reduce-overhead}; do
      echo "== $config, PyTorch $mode $dt"
      python3 tests/tools/decoders/decoder_models.py bench $config $prompt $new --dtype $dt --mode $mode 2>&1 |
        grep -v Warn | tee $OUT/torch_${mode}_$dt.txt
      same_tokens $OUT/torch_${mode}_$dt.txt
    done
  done
  python3 - $OUT <<'PY'
import glob, os, re, sys
print("| run | tokens/s | GB/s (weights + cache a token) | share of copy bandwidth |")
print("|---|---|---|---|")
for f in sorted(glob.glob(os.path.join(sys.argv[1], "spire_*.txt"))):
    t = open(f).read()
    tps = re.search(r"([0-9.]+) tokens/s", t)
    bw = re.search(r"bandwidth achieved: ([0-9.]+) GB/s.*?(?:, ([0-9.]+)% of the device's copy bandwidth \(([0-9.]+) GB/s\))?$", t, re.M)
    name = "spire " + os.path.basename(f)[6:-4].replace("_", " ")
    print(f"| {name} | {tps.group(1) if tps else '-'} | {bw.group(1) if bw else '-'} | "
          f"{bw.group(2) + '% of ' + bw.group(3) + ' GB/s' if bw and bw.group(2) else '-'} |")
for f in sorted(glob.glob(os.path.join(sys.argv[1], "torch_*_*.txt"))):
    m = re.search(r"torch (\S+) (\S+): ([0-9.]+) tokens/s, ([0-9.]+) GB/s", open(f).read())
    if m:
        print(f"| PyTorch {m.group(1)} {m.group(2)} | {m.group(3)} | {m.group(4)} | - |")
PY
  exit 0
fi
if [ "${PARTS:-}" = memory ]; then
  P=/tmp/memory
  mkdir -p $P
  # The process's peak device memory while "$@" runs: nvidia-smi's per-process used memory every 50 ms.
  peak_of() {
    nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits -lms 50 < /dev/null > $P/smi.txt 2>/dev/null &
    local smi=$!
    "$@"
    local rc=$?
    kill $smi 2>/dev/null; wait $smi 2>/dev/null
    echo "process peak $(awk -F', ' 'max < $2 {max = $2} END {print max + 0}' $P/smi.txt) MiB (nvidia-smi, rc $rc)"
  }
  python3 - $P ${BATCHES:-256 1024} <<'PY' 2>&1 | grep -v Warn
import sys, torch, torchvision, numpy as np
sys.path.insert(0, "tools/gpu")
from safetensors_io import write_safetensors, Bf16Bits
out, batches = sys.argv[1], [int(b) for b in sys.argv[2:]]
torch.manual_seed(0)
m = torchvision.models.resnet50(weights=None).eval()
torch.onnx.export(m, torch.randn(1, 3, 224, 224), f"{out}/resnet50.onnx", opset_version=13, input_names=["x"],
                  output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, dynamo=False)
for b in batches:
    write_safetensors(f"{out}/resnet50.b{b}.in.safetensors", {"x": np.random.default_rng(b).standard_normal((b, 3, 224, 224), dtype=np.float32)})
g = np.random.default_rng(7)
for t in ("f32", "bf16"):
    dtype = "f32" if t == "f32" else "bf16"
    open(f"{out}/mlp_{t}.graph", "w").write(f"a = input() : {dtype}[16384,12288]\nb = input() : {dtype}[12288,49152]\n"
                                            f"c = matmul(a, b) : {dtype}[16384,49152]\noutput y = c\n")
ab = {"a": g.standard_normal((16384, 12288), dtype=np.float32) * 0.01, "b": g.standard_normal((12288, 49152), dtype=np.float32) * 0.01}
write_safetensors(f"{out}/mlp_f32.in.safetensors", ab)
bits = lambda v: Bf16Bits(((v.view(np.uint32) + 0x7FFF + ((v.view(np.uint32) >> 16) & 1)) >> 16).astype(np.uint16))
write_safetensors(f"{out}/mlp_bf16.in.safetensors", {k: bits(v) for k, v in ab.items()})  # rounded to nearest even
np.save(f"{out}/mlp_a.npy", ab["a"]); np.save(f"{out}/mlp_b.npy", ab["b"])
PY
  for d in $([ "${SPIRE:-1}" = 1 ] && echo cuda:0 vulkan:0); do  # SPIRE=0: PyTorch's figures alone
    for b in ${BATCHES:-256 1024}; do
      echo "== spire resnet50 b$b on $d"
      peak_of $B/spire run $P/resnet50.onnx --inputs $P/resnet50.b$b.in.safetensors --outputs $P/o.safetensors \
        --device $d --stats --bench 3 2>&1 | grep -E 'memory on|weights|inputs and|arena|live at|without reuse|process peak|^'$d'|rror'
    done
    for t in f32 bf16; do
      echo "== spire mlp $t (16384 x 12288 x 49152) on $d"
      peak_of $B/spire run $P/mlp_$t.graph --inputs $P/mlp_$t.in.safetensors --outputs $P/o.safetensors \
        --device $d --stats --bench 3 2>&1 | grep -E 'memory on|weights|inputs and|arena|live at|process peak|^'$d'|rror'
    done
  done
  for b in ${BATCHES:-256 1024}; do
    echo "== torch resnet50 b$b (eager, no_grad)"
    peak_of python3 - $P/resnet50.b$b.in.safetensors <<'PY' 2>&1 | grep -v Warn
import sys, torch, torchvision
sys.path.insert(0, "tools/gpu")
from safetensors_io import read_safetensors
torch.manual_seed(0)
m = torchvision.models.resnet50(weights=None).eval().cuda()
x = torch.from_numpy(read_safetensors(sys.argv[1])["x"]).cuda()
torch.cuda.reset_peak_memory_stats()
with torch.no_grad():
    m(x); torch.cuda.synchronize()
print(f"torch max_memory_allocated {torch.cuda.max_memory_allocated() / 1e6:.2f} MB")
PY
  done
  for t in float32 bfloat16; do
    echo "== torch mlp $t"
    peak_of python3 - $P $t <<'PY' 2>&1 | grep -v Warn
import sys, torch, numpy as np
dt = getattr(torch, sys.argv[2])
a = torch.from_numpy(np.load(f"{sys.argv[1]}/mlp_a.npy")).cuda().to(dt)
b = torch.from_numpy(np.load(f"{sys.argv[1]}/mlp_b.npy")).cuda().to(dt)
torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats()
c = a @ b; torch.cuda.synchronize()
print(f"torch max_memory_allocated {torch.cuda.max_memory_allocated() / 1e6:.2f} MB")
PY
  done
  exit 0
fi
if [ "${PARTS:-}" = precision ]; then
  batch=${BATCH:-32}
  P=/tmp/precision
  mkdir -p $P
  # Exports each model and its input, writes PyTorch's float64 output (the reference) and times eager strict fp32 and
  # eager TF32 (PyTorch's default for convolutions).
  models=${MODELS:-resnet18 resnet50 efficientnet_b0 densenet121 mobilenet_v3_small squeezenet1_1}
  python3 - $P $batch $models <<'PY' 2>&1 | grep -v Warn | tee $P/lines.txt
import os, sys, time, torch, torchvision, numpy as np
sys.path.insert(0, "tools/gpu")
from safetensors_io import write_safetensors
out, batch, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
compiled = os.environ.get("COMPILE", "1") == "1"
torch.set_grad_enabled(False)  # inference: no autograd records, for eager and torch.compile alike
def timed(f, runs=30):
    for _ in range(5): f()
    torch.cuda.synchronize(); ts = []
    for _ in range(runs):
        t = time.perf_counter(); f(); torch.cuda.synchronize(); ts.append((time.perf_counter() - t) * 1e3)
    return sorted(ts)[len(ts) // 2]
for name in names:
    torch.manual_seed(0)
    m = getattr(torchvision.models, name)(weights=None).eval()
    x = torch.randn(batch, 3, 224, 224, generator=torch.Generator().manual_seed(1))
    torch.onnx.export(m, x[:1], f"{out}/{name}.onnx", opset_version=13, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, dynamo=False)
    write_safetensors(f"{out}/{name}.in.safetensors", {"x": x.numpy().astype(np.float32)})
    with torch.no_grad():
        ref = m.double()(x.double()).numpy()
        np.save(f"{out}/{name}.ref.npy", ref)
        g, xg = m.float().cuda(), x.cuda()
        runs = [("eager_fp32", g, False), ("eager_tf32", g, True)]
        if compiled:  # torch.compile's default mode under PyTorch's default TF32 (convolutions on, matmuls off)
            runs.append(("compile_default", torch.compile(g), None))
        for label, f, tf32 in runs:
            if tf32 is None:
                torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = True, False
            else:
                torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = tf32
            y = f(xg).double().cpu().numpy()
            err = np.abs(y - ref).max() / max(1.0, np.abs(ref).max())
            print(f"torch {name} b{batch} {label} {timed(lambda: f(xg)):.3f} ms, error {err:.2e}", flush=True)
PY
  for name in $models; do
    for d in cuda:0 vulkan:0; do
      for p in ${POLICIES:-fp32 tf32 bf16}; do
        o=$P/$name.$d.$p.safetensors
        ms=$($B/spire run $P/$name.onnx --inputs $P/$name.in.safetensors --outputs $o --device $d --precision $p \
               --bench 30 ${SPIRE_RUN_ARGS:-} 2> $P/err.txt | awk -v d=$d '$1 == d {print $3}')
        note=$(grep -o 'note: .*' $P/err.txt | head -1)
        err=$(python3 -c "import sys, numpy as np; sys.path.insert(0, 'tools/gpu')
from safetensors_io import read_safetensors
y = read_safetensors('$o')['y'].astype(np.float64); r = np.load('$P/$name.ref.npy')
print(f'{np.abs(y - r).max() / max(1.0, np.abs(r).max()):.2e}')" 2>&1 | tail -1)
        echo "spire $name b$batch $d --precision $p: ${ms:-?} ms (median device time), error $err ${note:+($note)}" |
          tee -a $P/lines.txt
      done
    done
  done
  # Issue 53's table: each model's times side by side, and spire's best on each device over torch.compile's.
  python3 - $P/lines.txt <<'PY'
import re, sys
ms, torch_labels, spire_labels, models = {}, ["eager_fp32", "eager_tf32", "compile_default"], [], []
for line in open(sys.argv[1]):
    t = re.match(r"torch (\S+) b\d+ (\S+) ([\d.]+) ms", line)
    s = re.match(r"spire (\S+) b\d+ (\S+) --precision (\S+): ([\d.]+) ms", line)
    name, label, value = (t[1], t[2], t[3]) if t else (s[1], f"{s[2]} {s[3]}", s[4]) if s else (None, None, None)
    if not name:
        continue
    if name not in models:
        models.append(name)
    if s and label not in spire_labels:
        spire_labels.append(label)
    ms[(name, label)] = float(value)
labels = torch_labels + spire_labels
print("| model | " + " | ".join(l.replace("_", " ") for l in labels) + " | best cuda:0 / torch.compile | best vulkan:0 / torch.compile |")
print("|---|" + "---:|" * (len(labels) + 2))
for m in models:
    row = [f"{ms[(m, l)]:.2f}" if (m, l) in ms else "-" for l in labels]
    ratios = []
    for dev in ("cuda:0", "vulkan:0"):
        best = min((v for (n, l), v in ms.items() if n == m and l.startswith(dev + " ")), default=None)
        tc = ms.get((m, "compile_default"))
        ratios.append(f"{best / tc:.2f}" if best and tc else "-")
    print(f"| {m} | " + " | ".join(row + ratios) + " |")
PY
  exit 0
fi
M=/tmp/models
mkdir -p $M && cp .gpu/models/* $M/
builds=spire
[ -x $B/spire_before ] && builds="spire_before spire"
parts=${PARTS:-f32 f16}
: > $OUT/torch_models.txt
for part in $parts; do
  case $part in
  f32) python3 benchmarks/torch_models.py $M 2>&1 | grep -v Warn >> $OUT/torch_models.txt ;;
  f16) python3 tools/gpu/half_resnet18.py $M 2>&1 | grep -v Warn >> $OUT/torch_models.txt ;;
  launches) ;;
  *) echo "unknown part '$part'"; exit 2 ;;
  esac
done
cat $OUT/torch_models.txt
for build in $builds; do
  echo "== $build"
  python3 tools/gpu/models_table.py $B/$build $M $OUT/torch_models.txt 2>&1 | tee $OUT/models_$build.txt
done
case " $parts " in *" launches "*)
  echo "== launches per inference at batch 1 ($builds)"
  for m in resnet18 resnet18_f16 encoder_op17; do
    for d in cuda:0 vulkan:0; do
      n=""
      for build in $builds; do
        n="$n $($B/$build run $M/$m.onnx --inputs $M/$m.b1.in.safetensors --outputs /tmp/o.safetensors --device $d \
          --profile --bench 3 2>&1 | grep -cE '^ +[0-9]+ +[0-9.]+ ')"
      done
      echo "$m $d $n"
    done
  done ;;
esac
