// Reverse-mode differentiation: one reverse walk over the nodes, calling each op's VJP rule.
#include "autograd/grad.h"

#include <fmt/format.h>

#include "ir/graph/op_table.h"

namespace spire::autograd {

using graph::GraphError;
using graph::Graph;
using graph::Node;
using graph::Value;

std::vector<Value> grad(Graph& g, Value loss, const std::vector<Value>& wrt) {
  const graph::TensorType loss_type = g.type(loss);  // validates loss
  if (!graph::is_float(loss_type.dtype) || loss_type.rank() != 0)
    throw GraphError(fmt::format("autograd::grad: the loss '{}' must be a float scalar, got {}", g.node(loss).name,
                                 loss_type.to_string()));
  const size_t n = size_t(loss.id) + 1;  // nothing after the loss can influence it

  // flows[i]: a gradient can flow from value i back to some wrt (i is a wrt, or an input of i flows and
  // i's op has a VJP rule).
  std::vector<bool> flows(n, false);
  for (Value w : wrt) {
    const graph::TensorType& t = g.type(w);
    if (!graph::is_float(t.dtype))
      throw GraphError(fmt::format("autograd::grad: cannot differentiate with respect to '{}' of type {} (not float)",
                                   g.node(w).name, t.to_string()));
    if (size_t(w.id) < n) flows[size_t(w.id)] = true;
  }
  for (size_t i = 0; i < n; ++i) {
    const Node& node = g.nodes()[i];
    if (flows[i] || !graph::op_info(node.op).vjp) continue;
    for (Value in : node.inputs) flows[i] = flows[i] || flows[size_t(in.id)];
  }

  // reaches[i]: value i is used, directly or not, by the loss.
  std::vector<bool> reaches(n, false);
  reaches[n - 1] = true;
  for (size_t i = n; i-- > 0;) {
    if (!reaches[i]) continue;
    for (Value in : g.nodes()[i].inputs) reaches[size_t(in.id)] = true;
  }

  std::vector<Value> grads(n);  // accumulated gradient of each value, invalid while none
  grads[n - 1] = g.scalar(1.0, loss_type.dtype);

  for (size_t i = n; i-- > 0;) {
    if (!flows[i] || !reaches[i] || !grads[i].valid()) continue;
    const Node node = g.nodes()[i];  // a copy: the VJP rule appends nodes
    const graph::OpInfo& info = graph::op_info(node.op);
    if (!info.vjp) continue;  // a leaf (or a wrt computed by a non-differentiable op)
    graph::VjpContext ctx{g, Value{int32_t(i)}, grads[i], {}};
    for (Value in : node.inputs) ctx.wanted.push_back(flows[size_t(in.id)] && reaches[size_t(in.id)]);
    std::vector<Value> input_grads = info.vjp(ctx);
    if (input_grads.size() != node.inputs.size())
      throw GraphError(fmt::format("VJP rule of {} returned {} gradients for {} inputs", info.name,
                                   input_grads.size(), node.inputs.size()));
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      Value in = node.inputs[k];
      Value gk = input_grads[k];
      if (!ctx.wanted[k] || !gk.valid()) continue;
      if (g.type(gk) != g.type(in))
        throw GraphError(fmt::format("VJP rule of {} ('{}') gave input {} a gradient of type {}, expected {}",
                                     info.name, node.name, k, g.type(gk).to_string(), g.type(in).to_string()));
      Value& acc = grads[size_t(in.id)];
      acc = acc.valid() ? g.add(acc, gk) : gk;
    }
  }

  std::vector<Value> out;
  for (Value w : wrt) {
    if (size_t(w.id) < n && grads[size_t(w.id)].valid()) out.push_back(grads[size_t(w.id)]);
    else out.push_back(g.constant(0.0, g.type(w).dtype, g.type(w).shape));
  }
  return out;
}

}  // namespace spire::autograd
