#!/usr/bin/env bash
# Issue 3 on the GPU machine (which has PyTorch): PyTorch's float64 LeNet logits, loss and gradients against
# `spire lenet export --batch 8 --dtype f64` + `spire graph eval` (the reference evaluator).
set -uo pipefail
source tools/gpu/env.sh
python3 tools/gpu/torch_lenet_reference.py make /tmp/ref_in.safetensors /tmp/ref_out.safetensors --batch 8 --seed 0
$B/spire lenet export --batch 8 --dtype f64 -o /tmp/lenet8.graph
$B/spire graph eval /tmp/lenet8.graph --inputs /tmp/ref_in.safetensors --outputs /tmp/spire_out.safetensors --dtype f64
python3 tools/gpu/torch_lenet_reference.py compare /tmp/ref_out.safetensors /tmp/spire_out.safetensors | tee /tmp/issue3_reference.txt
