// Lowering's op table (op_lowering.h): the families' entries gathered once and indexed by OpKind.
#include "lowering/op_lowering.h"

#include <stdexcept>

#include <fmt/format.h>

#include "ir/graph/op_table.h"

namespace spire::lowering {

namespace {

std::vector<OpLowering> gather() {
  std::vector<OpLowering> all;
  for (auto family : {layout_lowerings, reduce_lowerings, indexing_lowerings, matmul_lowerings, conv2d_lowerings,
                      pool2d_lowerings, softmax_lowerings, argmax_lowerings, cross_entropy_lowerings, int8_matmul_lowerings, norm_lowerings})
    for (OpLowering& e : family()) all.push_back(e);
  return all;
}

// Index = OpKind; nullptr where an op has no entry. An entry naming no op of the graph's table, or an op named
// twice, is a programming error caught at first use (and by tests/lowering/op_lowering_table_test.cpp).
std::vector<const OpLowering*> index_by_op(const std::vector<OpLowering>& entries) {
  std::vector<const OpLowering*> by_op(size_t(graph::op_count()), nullptr);
  for (const OpLowering& e : entries) {
    const std::optional<graph::OpKind> op = graph::op_from_name(e.op);
    if (!op) throw std::logic_error(fmt::format("lowering table: '{}' is no op of the op table", e.op));
    if (by_op[size_t(*op)]) throw std::logic_error(fmt::format("lowering table: '{}' has two entries", e.op));
    if (!e.lower) throw std::logic_error(fmt::format("lowering table: '{}' has no lowering", e.op));
    by_op[size_t(*op)] = &e;
  }
  return by_op;
}

const std::vector<const OpLowering*>& table() {
  static const std::vector<const OpLowering*> t = index_by_op(op_lowerings());
  return t;
}

}  // namespace

const std::vector<OpLowering>& op_lowerings() {
  static const std::vector<OpLowering> entries = gather();
  return entries;
}

std::string tunable_op_names() {
  std::string names;
  for (const OpLowering& e : op_lowerings())
    if (e.tunable) names += (names.empty() ? "" : ", ") + std::string(e.op);
  return names;
}

const OpLowering* op_lowering(graph::OpKind op) {
  const auto& t = table();
  // Custom ops are registered after the table was built: their kinds lie beyond it.
  return size_t(op) < t.size() ? t[size_t(op)] : nullptr;
}

void lower_node(LoweringContext& ctx, graph::Value v) {
  const graph::Node& n = ctx.graph().node(v);
  if (graph::is_user_op(n.op)) return lower_custom(ctx, v);
  if (graph::op_category(n.op) == graph::OpCategory::Pointwise) return lower_elementwise(ctx, v);
  if (const OpLowering* e = op_lowering(n.op)) return e->lower(ctx, v);
  // Input, parameter and state leaves need no launch: their buffers are filled by the caller.
  if (graph::is_leaf(n.op)) return;
  throw graph::GraphError(fmt::format("op {} ('{}'): no lowering", graph::op_name(n.op), n.name));
}

}  // namespace spire::lowering
