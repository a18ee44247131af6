// Canonical pass: layer and RMS normalizations, imported as chains of reductions and pointwise ops, become one op each
// (ir/graph/ops/norm_ops.cpp), one kernel where the chain took six launches (two reductions, each between pointwise
// steps). The forms found, over the last axis with keepdim, every intermediate read by the chain alone:
//
//   layer_norm   d = x - mean(x); (d / sqrt(mean(d^2) + eps)) * scale + bias     d^2 as pow(d, 2) (PyTorch's ONNX
//                                                                               export below opset 17) or d * d (ONNX's
//                                                                               LayerNormalization as imported)
//   rms_norm     scale * (x * rsqrt(mean(x^2) + eps))                            rsqrt as reciprocal(sqrt(.)) or
//                                                                               1 / sqrt(.); x^2 as pow(x, 2) or x * x
//
// scale and bias must be vectors of the last axis's length and eps a constant: other chains stay as they are. The
// result computes what the chain computes, in another order within each row (so within the ops' tolerances, not to
// the bit). Autograd's gradients of a graph that went through it are layer_norm's and rms_norm's own VJPs.
#pragma once

#include <vector>

#include "ir/graph/graph.h"
#include "passes/rewrite.h"

namespace spire::passes {

std::vector<Rule> norm_rules();
graph::Graph fuse_norms(const graph::Graph& g);

}  // namespace spire::passes
