#include "passes/pool_grad_by_argmax.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "passes/rebuild.h"

namespace spire::passes {

namespace {

using graph::OpKind;
using graph::Value;

// What the rewrite needs to know of the original graph, found before rebuilding it.
struct PoolGradPlan {
  std::vector<int32_t> pool_of;    // index = max_pool2d_grad id: the forward max_pool2d of the same input and window
  std::vector<bool> needs_argmax;  // index = max_pool2d id: some gradient reads its positions
  std::vector<bool> masked;        // index = relu_grad id: relu_grad(G, y) of a rewritten G = max_pool2d_grad(g, y)
  std::vector<bool> absorbed;      // index = max_pool2d_grad id: read only by such masks (they take its place)
};

PoolGradPlan plan_rewrite(const graph::Graph& g) {
  const size_t n = size_t(g.size());
  PoolGradPlan p{std::vector<int32_t>(n, -1), std::vector<bool>(n, false), std::vector<bool>(n, false),
                 std::vector<bool>(n, false)};
  const std::vector<std::vector<Value>> users = g.users();
  for (Value v : g.values()) {
    const graph::Node& grad = g.node(v);
    if (grad.op != OpKind::MaxPool2dGrad) continue;
    // The forward pooling: another reader of the gradient's pooled input y, earlier, with the same window.
    for (Value u : users[size_t(grad.inputs[1].id)]) {
      const graph::Node& pool = g.node(u);
      if (u.id < v.id && pool.op == OpKind::MaxPool2d && pool.attrs == grad.attrs) {
        p.pool_of[size_t(v.id)] = u.id;
        p.needs_argmax[size_t(u.id)] = true;
        break;
      }
    }
  }
  auto stored = [&](Value v) {
    for (const auto& o : g.outputs())
      if (o.value == v) return true;
    for (const auto& u : g.state_updates())
      if (u.value == v) return true;
    return false;
  };
  for (Value v : g.values()) {
    const graph::Node& r = g.node(v);
    if (r.op != OpKind::ReluGrad) continue;
    const Value grad = r.inputs[0];
    if (p.pool_of[size_t(grad.id)] >= 0 && r.inputs[1] == g.node(grad).inputs[1]) p.masked[size_t(v.id)] = true;
  }
  for (Value v : g.values()) {
    if (p.pool_of[size_t(v.id)] < 0 || stored(v)) continue;
    const std::vector<Value>& us = users[size_t(v.id)];
    p.absorbed[size_t(v.id)] =
        !us.empty() && std::all_of(us.begin(), us.end(), [&](Value u) { return bool(p.masked[size_t(u.id)]); });
  }
  return p;
}

}  // namespace

graph::Graph pool_grad_by_argmax(const graph::Graph& g) {
  const PoolGradPlan p = plan_rewrite(g);
  std::vector<Value> argmax_of(size_t(g.size()));  // index = max_pool2d id: its positions in the new graph
  auto pool_grad = [&](graph::Graph& out, Value grad, Value upstream, const std::string& name) {
    const graph::Node& n = g.node(grad);
    graph::Attrs a = n.attrs;
    a.set("input_shape", n.type.shape);
    return out.add_node(OpKind::MaxPool2dGradArgmax, {upstream, argmax_of[size_t(p.pool_of[size_t(grad.id)])]},
                        std::move(a), name);
  };
  return rebuild(g, [&](graph::Graph& out, Value v, std::vector<Value> inputs, const std::vector<Value>& map) {
    const graph::Node& n = g.node(v);
    if (n.op == OpKind::MaxPool2d && p.needs_argmax[size_t(v.id)]) {
      const Value pooled = out.add_node(n.op, inputs, n.attrs, n.name);
      argmax_of[size_t(v.id)] =
          out.add_node(OpKind::MaxPool2dArgmax, {inputs[0]}, n.attrs, fresh_name(g, out, n.name + ".argmax"));
      return pooled;
    }
    // Read only by masks rewritten below, which do not read it: nothing to add. The map's entry stays unread.
    if (p.absorbed[size_t(v.id)]) return inputs[0];
    if (p.pool_of[size_t(v.id)] >= 0) return pool_grad(out, v, inputs[0], n.name);
    if (p.masked[size_t(v.id)]) {
      const Value grad = n.inputs[0];
      const graph::Node& gn = g.node(grad);
      const Value pooled = map[size_t(p.pool_of[size_t(grad.id)])];
      const Value mask =
          out.add_node(OpKind::ReluGrad, {map[size_t(gn.inputs[0].id)], pooled}, {}, fresh_name(g, out, n.name + ".pooled_mask"));
      return pool_grad(out, grad, mask, n.name);
    }
    return out.add_node(n.op, inputs, n.attrs, n.name);
  });
}

}  // namespace spire::passes
