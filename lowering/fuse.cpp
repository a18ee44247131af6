#include "lowering/fuse.h"

#include <algorithm>

#include "ir/graph/op_table.h"

namespace spire::lowering {

bool is_pointwise(graph::OpKind op) { return graph::op_category(op) == graph::OpCategory::Pointwise; }

bool absorbed_transpose(const graph::Graph& g, graph::Value v) {
  const graph::Node& n = g.node(v);
  if (n.op != graph::OpKind::Permute || n.type.shape.size() != 2 || n.attrs.get_ints("perm") != std::vector<int64_t>{1, 0})
    return false;
  for (const auto& o : g.outputs())
    if (o.value == v) return false;
  for (const auto& u : g.state_updates())
    if (u.value == v) return false;
  // Users come after v (the graph is topological); scanned directly, since lowering asks once per matmul operand
  // and building the whole users table each time would be quadratic in allocations.
  bool used = false;
  for (int32_t id = v.id + 1; id < g.size(); ++id) {
    const graph::Node& u = g.node(id);
    if (std::find(u.inputs.begin(), u.inputs.end(), v) == u.inputs.end()) continue;
    if (u.op != graph::OpKind::Matmul) return false;
    used = true;
  }
  return used;
}

std::vector<bool> fuse_pointwise(const graph::Graph& g) {
  std::vector<bool> fused(size_t(g.size()), false);
  std::vector<bool> must_store(size_t(g.size()), false);
  for (const auto& o : g.outputs()) must_store[size_t(o.value.id)] = true;
  for (const auto& u : g.state_updates()) must_store[size_t(u.value.id)] = true;
  auto users = g.users();
  for (int32_t id = 0; id < g.size(); ++id) {
    const graph::Node& n = g.node(id);
    if (n.op == graph::OpKind::Permute && absorbed_transpose(g, graph::Value{id})) {
      fused[size_t(id)] = true;
      continue;
    }
    if (!is_pointwise(n.op) || must_store[size_t(id)]) continue;
    auto& us = users[size_t(id)];
    if (us.empty() || std::any_of(us.begin(), us.end(), [&](graph::Value u) { return u != us[0]; })) continue;
    const graph::Node& user = g.node(us[0]);
    int uses = int(std::count(user.inputs.begin(), user.inputs.end(), graph::Value{id}));
    if (uses != 1 || !is_pointwise(user.op) || user.type.shape != n.type.shape) continue;
    fused[size_t(id)] = true;
  }
  return fused;
}

}  // namespace spire::lowering
