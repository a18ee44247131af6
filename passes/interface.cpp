// interface_change(): compares the leaves, outputs and state-update targets of two graphs by name.
#include "passes/interface.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

namespace spire::passes {
namespace {

bool is_fed(graph::OpKind op) {
  return op == graph::OpKind::Input || op == graph::OpKind::Parameter || op == graph::OpKind::State;
}

std::map<std::string, const graph::Node*> fed_leaves(const graph::Graph& g) {
  std::map<std::string, const graph::Node*> m;
  for (const graph::Node& n : g.nodes())
    if (is_fed(n.op)) m[n.name] = &n;
  return m;
}

std::set<std::string> update_targets(const graph::Graph& g) {
  std::set<std::string> s;
  for (const graph::StateUpdate& u : g.state_updates()) s.insert(g.node(u.target).name);
  return s;
}

}  // namespace

std::string interface_change(const graph::Graph& before, const graph::Graph& after) {
  const auto was = fed_leaves(before), is = fed_leaves(after);
  for (const auto& [name, n] : was) {
    auto it = is.find(name);
    if (it == is.end()) return fmt::format("the {} '{}' is gone", graph::op_name(n->op), name);
    const graph::Node& m = *it->second;
    if (m.op != n->op) return fmt::format("'{}' is a {} (was a {})", name, graph::op_name(m.op), graph::op_name(n->op));
    if (m.type != n->type)
      return fmt::format("the {} '{}' is {} (was {})", graph::op_name(m.op), name, m.type.to_string(), n->type.to_string());
    if (m.attrs != n->attrs) return fmt::format("the {} '{}' has other attributes", graph::op_name(m.op), name);
  }
  for (const auto& [name, n] : is)
    if (!was.contains(name)) return fmt::format("a new {} '{}' appeared", graph::op_name(n->op), name);

  const auto& a = before.outputs();
  const auto& b = after.outputs();
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    if (i >= b.size()) return fmt::format("output '{}' is gone", a[i].name);
    if (i >= a.size()) return fmt::format("a new output '{}' appeared", b[i].name);
    if (a[i].name != b[i].name) return fmt::format("output {} is '{}' (was '{}')", i, b[i].name, a[i].name);
    const graph::TensorType ta = before.type(a[i].value), tb = after.type(b[i].value);
    if (ta != tb) return fmt::format("output '{}' is {} (was {})", a[i].name, tb.to_string(), ta.to_string());
  }

  const auto ua = update_targets(before), ub = update_targets(after);
  for (const std::string& t : ua)
    if (!ub.contains(t)) return fmt::format("the state update of '{}' is gone", t);
  for (const std::string& t : ub)
    if (!ua.contains(t)) return fmt::format("a new state update of '{}' appeared", t);
  return "";
}

}  // namespace spire::passes
