#include "passes/rebuild.h"

#include <fmt/format.h>

namespace spire::passes {

std::string fresh_name(const graph::Graph& original, const graph::Graph& out, const std::string& base) {
  std::string n = base;
  for (int k = 1; original.find(n) || out.find(n); ++k) n = fmt::format("{}_{}", base, k);
  return n;
}

graph::Graph rebuild(const graph::Graph& g, const NodeCopy& copy, const LeafCopy& copy_leaf) {
  graph::Graph out;
  std::vector<graph::Value> map(size_t(g.size()));
  for (graph::Value v : g.values()) {
    const graph::Node& n = g.node(v);
    if (graph::is_leaf(n.op)) {
      map[size_t(v.id)] = copy_leaf ? copy_leaf(out, v) : out.add_leaf(n.op, n.name, n.type, n.attrs);
      continue;
    }
    std::vector<graph::Value> inputs;
    for (graph::Value in : n.inputs) inputs.push_back(map[size_t(in.id)]);
    map[size_t(v.id)] = copy(out, v, std::move(inputs), map);
  }
  for (const graph::NamedOutput& o : g.outputs()) out.output(o.name, map[size_t(o.value.id)]);
  for (const graph::StateUpdate& u : g.state_updates())
    out.state_update(map[size_t(u.target.id)], map[size_t(u.value.id)]);
  return out;
}

}  // namespace spire::passes
