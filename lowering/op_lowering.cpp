// The dispatch table from op to lowering function: every op has one (leaves other than constants need none).
#include "lowering/op_lowering.h"

#include <vector>

#include "ir/graph/op_table.h"

#include <fmt/format.h>

namespace spire::lowering {

namespace {

using Lowering = void (*)(LoweringContext&, graph::Value);

// The lowering of each named non-pointwise op. Pointwise ops need none: their kernel is generated from the
// formulas of their op table entries (lower_pointwise.cpp).
std::vector<Lowering> build_table() {
  using K = graph::OpKind;
  std::vector<Lowering> t(size_t(graph::op_count()), nullptr);
  auto set = [&](K k, Lowering f) { t[size_t(k)] = f; };
  set(K::Constant, lower_constant);
  for (K k : {K::Sum, K::Mean, K::Max, K::SumTo}) set(k, lower_reduce);
  set(K::Reshape, lower_reshape);
  set(K::Flatten, lower_reshape);
  set(K::Permute, lower_permute);
  set(K::BroadcastTo, lower_broadcast_to);
  set(K::Matmul, lower_matmul);
  set(K::Conv2d, lower_conv2d);
  set(K::Conv2dGradInput, lower_conv2d_grad_input);
  set(K::Conv2dGradWeight, lower_conv2d_grad_weight);
  set(K::MaxPool2d, lower_max_pool2d);
  set(K::MaxPool2dGrad, lower_max_pool2d_grad);
  set(K::MaxPool2dArgmax, lower_max_pool2d_argmax);
  set(K::MaxPool2dGradArgmax, lower_max_pool2d_grad_argmax);
  set(K::AvgPool2d, lower_avg_pool2d);
  set(K::AvgPool2dGrad, lower_avg_pool2d_grad);
  set(K::Softmax, lower_softmax);
  set(K::LogSoftmax, lower_softmax);
  set(K::CrossEntropy, lower_cross_entropy);
  set(K::CrossEntropyGrad, lower_cross_entropy_grad);
  // Ops without an enumerator, by name.
  auto by_name = [&](std::string_view name, Lowering f) { t[size_t(*graph::op_from_name(name))] = f; };
  by_name("slice", lower_slice);
  by_name("pad", lower_pad);
  by_name("concat", lower_concat);
  by_name("gather", lower_gather);
  by_name("gather_grad", lower_gather_grad);
  for (const graph::OpInfo& info : graph::op_table())
    if (info.category == graph::OpCategory::Pointwise) t[size_t(info.kind)] = lower_elementwise;
  return t;
}

}  // namespace

void lower_node(LoweringContext& ctx, graph::Value v) {
  static const std::vector<Lowering> table = build_table();
  const graph::Node& n = ctx.graph().node(v);
  // Custom ops are registered after the table was built; they all lower the same way.
  Lowering f = size_t(n.op) < table.size() ? table[size_t(n.op)] : nullptr;
  if (graph::is_user_op(n.op)) f = lower_custom;
  // Input, parameter and state leaves need no launch: their buffers are filled by the caller.
  if (graph::is_leaf(n.op) && n.op != graph::OpKind::Constant) return;
  if (!f) throw graph::GraphError(fmt::format("op {} ('{}'): no lowering", graph::op_name(n.op), n.name));
  f(ctx, v);
}

}  // namespace spire::lowering
