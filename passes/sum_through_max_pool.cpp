#include "passes/sum_through_max_pool.h"

#include <optional>
#include <vector>

#include "passes/rebuild.h"

namespace spire::passes {

namespace {

using graph::OpKind;
using graph::Value;

// True when sum_to(x, target) with x of rank 4 ([N, C, H, W]) adds over both spatial dims.
bool sums_both_spatial_dims(const graph::Shape& x, const std::vector<int64_t>& target) {
  if (x.size() != 4 || target.size() > 4) return false;
  const size_t lead = 4 - target.size();
  for (size_t d : {size_t(2), size_t(3)})
    if (d >= lead && target[d - lead] != 1) return false;
  return true;
}

// What sum_to node `s` may add instead of its input, in `out`: relu_grad(g, max_pool2d(y)) or g.
std::optional<Value> through_pool(const graph::Graph& g_in, graph::Graph& out, const graph::Node& s,
                                  const std::vector<Value>& map) {
  Value x = s.inputs[0];
  if (!sums_both_spatial_dims(g_in.type(x).shape, s.attrs.get_ints("shape"))) return std::nullopt;
  std::optional<Value> mask_of;  // the ReLU mask's operand, which must be the pooled tensor y
  if (g_in.node(x).op == OpKind::ReluGrad) {
    mask_of = g_in.node(x).inputs[1];
    x = g_in.node(x).inputs[0];
  }
  const graph::Node& grad = g_in.node(x);
  if (grad.op != OpKind::MaxPool2dGrad) return std::nullopt;
  const Value g = grad.inputs[0], y = grad.inputs[1];
  if (mask_of && *mask_of != y) return std::nullopt;
  if (g_in.type(g).numel() >= g_in.type(y).numel()) return std::nullopt;  // no fewer elements to add
  if (!mask_of) return map[size_t(g.id)];
  // The graph's own max_pool2d(y) with these window attrs (the forward pass's, before the sum), if it has one.
  for (Value v : g_in.values()) {
    const graph::Node& n = g_in.node(v);
    if (n.op == OpKind::MaxPool2d && n.inputs[0] == y && n.attrs == grad.attrs)
      return out.add_node(OpKind::ReluGrad, {map[size_t(g.id)], map[size_t(v.id)]}, {},
                          fresh_name(g_in, out, s.name + ".pooled_mask"));
  }
  return std::nullopt;
}

}  // namespace

graph::Graph sum_through_max_pool(const graph::Graph& g) {
  return rebuild(g, [&](graph::Graph& out, Value v, std::vector<Value> inputs, const std::vector<Value>& map) {
    const graph::Node& n = g.node(v);
    if (n.op == OpKind::SumTo)
      if (auto summed = through_pool(g, out, n, map)) return out.add_node(OpKind::SumTo, {*summed}, n.attrs, n.name);
    return out.add_node(n.op, inputs, n.attrs, n.name);
  });
}

}  // namespace spire::passes
