#!/usr/bin/env bash
# Packs what the ONNX issue's GPU runs need into .gpu/ (ignored by git; carried by the device tool with .gl/):
#   .gpu/bin/spire              the CLI built here (stripped; libonnx1/libprotobuf32 come from .gl/)
#   .gpu/data/                  Fashion-MNIST (gz), for LeNet training
#   .gpu/node/                  the ONNX node tests of the counted set (tests/onnx/select_node_tests.py)
#   .gpu/grad/                  imported nn.TransformerEncoderLayer with a loss, its backward graph, the feed and
#                               the float64 gradients computed here (compared on cuda:0 and vulkan:0 there)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
cmake --build build -j2 --target spire test_onnx_models
rm -rf .gpu && mkdir -p .gpu/bin .gpu/data .gpu/node .gpu/grad
cp build/bin/spire .gpu/bin/ && strip .gpu/bin/spire
cp /usr/share/datasets/fashion-mnist/*.gz .gpu/data/
data=/usr/share/libonnx-testdata/data/node
/usr/bin/python3 tests/onnx/select_node_tests.py "$data" | while read -r d; do cp -r "$d" .gpu/node/; done
models=build/tests/onnx/models
[ -f $models/encoder13.onnx ] || /usr/bin/python3 tests/onnx/export_models.py $models >/dev/null
g=.gpu/grad
build/bin/spire import $models/encoder13.onnx -o $g/m.graph >/dev/null
{ cat $g/m.graph
  echo "loss_weight = input() : f32[2,10,128]"
  echo "weighted = mul(y, loss_weight) : f32[2,10,128]"
  echo "loss = sum(weighted) {axes=[0,1,2], keepdim=false} : f32[]"
  echo "output loss = loss"; } > $g/loss.graph
build/bin/spire graph grad $g/loss.graph --loss loss --parameters -o $g/grad.graph
/usr/bin/python3 tools/gpu/make_grad_feed.py $g/m.safetensors $models/encoder13.in.safetensors $g/feed.safetensors
build/bin/spire graph eval $g/grad.graph --inputs $g/feed.safetensors --outputs $g/ref.safetensors
rm $g/m.graph $g/loss.graph
# The encoder layers for run-models.sh: torch 2.11 on the GPU machine cannot trace them for ONNX.
mkdir -p .gpu/models
/usr/bin/python3 benchmarks/torch_models.py .gpu/models --export-only encoder_op13 encoder_op17 2>&1 | grep -v Warn || true
du -sh .gpu .gl
