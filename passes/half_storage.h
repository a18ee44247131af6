// Half-precision storage of a graph's f32 values: the one conversion both the bf16/f16 precision policies
// (lowering/precision_policy.h, docs/PRECISION.md) and `spire diff --precision` (diff/half_precision.h) run. It sits
// here, below lowering, so that lower() can apply it; it only retypes values and inserts casts, and
// compute_in_f32 (compute_in_f32.h) then makes every op that touches a half value compute in f32 and round its
// result once, so products, convolutions and reductions still sum in f32.
#pragma once

#include <map>
#include <set>
#include <string>

#include "ir/graph/graph.h"
#include "ir/graph/tensor.h"

namespace spire::passes {

struct HalfOptions {
  // Nodes (by name) computed and stored in f32: their half inputs are cast up, and their f32 result is what every
  // reader gets (a half node reading it computes in f32 on it and rounds only its own result, so keeping a node in
  // f32 never rounds its value before it is used).
  std::set<std::string> keep_f32;
  // false (`spire diff --precision`): f32 inputs, parameters and states are declared half, and the outputs are what
  // the half graph computes. true (the precision policies): every input, parameter, state and output keeps its dtype,
  // so callers feed and read f32 as before; an f32 leaf (constants too, so f32 ops read them unrounded) is cast to half
  // right after it, an output cast back up.
  bool keep_interface = false;
  // With keep_interface: a parameter that no state update writes, that is not an output and that only half readers
  // read (through its cast to half, or a product's rounded copy) is declared half itself, in place of the f32 leaf and
  // its cast, so a device stores only the half copy (a model's weights under the policies: half f32's memory, not 1.5
  // times). Its callers still set f32 values: lower() keeps the original graph's f32 type as the leaf's interface, and
  // the upload rounds each value to half (lowering/device_bytes.h), the rounding the cast it replaces did.
  bool parameters_in_half = false;
};

// `g` with every f32 value stored in `half` (f16 or bf16), except what `options` keeps in f32. Every other node is
// rebuilt with the same op, inputs and attributes (its result type follows its inputs); a cast to f32 becomes a cast
// to `half`. Node names, outputs and state updates are kept (a cast this adds gets a generated name). Values of other
// dtypes (ints, bool, f64) are left as they are.
graph::Graph to_half(const graph::Graph& g, graph::DType half, const HalfOptions& options = {});

// The feeds of to_half(g) (keep_interface false): every f32 tensor rounded to `half`.
std::map<std::string, graph::Tensor> to_half(const std::map<std::string, graph::Tensor>& feeds, graph::DType half);

// The nodes of `g` that the precision policies keep in f32, as torch.autocast keeps its "fp32" ops (docs/PRECISION.md):
//   - the row normalizations and cross_entropy and its gradient (autocast_f32 in their entries): their outputs are probabilities and losses whose small
//     values half storage would flush or round coarsely;
//   - sum, mean, sum_to: the statistics of norms (means, variances), losses and bias gradients, whose magnitude grows
//     with their length (f16 overflows at 65504);
//   - exp, log, pow, sqrt, reciprocal, softplus: the exp/log chains and normalizers, whose range or conditioning
//     half storage would lose (exp(12) overflows f16);
//   - layer_norm and rms_norm, whose results autocast returns in f32 (the policy finds the chains an ONNX export
//     spells out first, lowering/precision_policy.cpp, so that theirs are too);
//   - an optimizer's update: every pointwise node from which a state update's new value is computed (without passing
//     a heavy op or a reduction), so parameters and optimizer states stay f32 master copies that small updates reach.
std::set<std::string> autocast_f32_nodes(const graph::Graph& g);

// The policy's rewrite: to_half(g, half, {autocast_f32_nodes(g), keep_interface = true, parameters_in_half = true}).
graph::Graph store_in_half(const graph::Graph& g, graph::DType half);

}  // namespace spire::passes
