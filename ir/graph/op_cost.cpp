// Cost of a node: the entry's own rule (heavy ops, some reductions), or its category's default, so that a new
// pointwise op is counted without writing anything.
#include <fmt/format.h>

#include "ir/graph/op_table.h"

namespace spire::graph {

int64_t io_bytes(const Node& node, std::span<const TensorType> inputs) {
  int64_t b = node.type.numel() * dtype_bytes(node.type.dtype);
  for (const TensorType& t : inputs) b += t.numel() * dtype_bytes(t.dtype);
  return b;
}

OpCost op_cost(const Node& node, std::span<const TensorType> inputs) {
  const OpInfo& info = op_info(node.op);
  if (info.cost) return info.cost(node, inputs);
  switch (info.category) {
    case OpCategory::Leaf: return {};  // filled or fed from outside the step
    case OpCategory::Pointwise: return {node.type.numel(), io_bytes(node, inputs)};
    case OpCategory::Reduction: return {inputs.empty() ? 0 : inputs[0].numel(), io_bytes(node, inputs)};
    case OpCategory::Layout: return {0, io_bytes(node, inputs)};
    case OpCategory::Custom: return {node.type.numel(), io_bytes(node, inputs)};  // unknown: as pointwise
    case OpCategory::Heavy: break;
  }
  // check_entry refuses such an entry; reaching here means the table was bypassed.
  throw GraphError(fmt::format("op '{}' has no cost rule", info.name));
}

OpCost op_cost(const Graph& g, Value v) {
  const Node& n = g.node(v);
  std::vector<TensorType> inputs;
  for (Value in : n.inputs) inputs.push_back(g.type(in));
  return op_cost(n, inputs);
}

}  // namespace spire::graph
