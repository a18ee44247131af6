#include "passes/cache_in_place.h"

#include <map>

#include <fmt/format.h>

namespace spire::passes {

using graph::Value;

namespace {

// How one cache state grows: the concat that appends to it, the cast between them (if any) and the axis.
struct Growth {
  Value concat, cast;
  int64_t axis = 0;
};

// The growth of state `s`, or why it has none of the form the pass rewrites.
std::string find_growth(const graph::Graph& g, const std::vector<std::vector<Value>>& users, Value s, Growth& out) {
  const std::string& name = g.node(s).name;
  Value read = s;
  if (users[size_t(s.id)].size() != 1)
    return fmt::format("cache '{}' has {} readers, not one", name, users[size_t(s.id)].size());
  const Value first = users[size_t(s.id)][0];
  if (g.node(first).op == graph::OpKind::Cast) {
    if (users[size_t(first.id)].size() != 1) return fmt::format("the cast of cache '{}' has several readers", name);
    out.cast = first;
    read = first;
  }
  const Value c = users[size_t(read.id)][0];
  const graph::Node& n = g.node(c);
  if (graph::op_name(n.op) != "concat" || n.inputs.size() != 2 || n.inputs[0] != read || n.inputs[1] == read)
    return fmt::format("cache '{}' is not read as the first of two inputs of a concat (its reader is {} '{}')", name,
                       graph::op_name(n.op), n.name);
  out.concat = c;
  out.axis = n.attrs.get_int("axis");
  if (out.axis < 0) out.axis += int64_t(n.type.shape.size());
  return "";
}

}  // namespace

InPlaceCache write_cache_in_place(const graph::Graph& g, const std::set<std::string>& caches, const std::string& slot,
                                  const std::set<std::string>& drop_outputs) {
  InPlaceCache r;
  const auto users = g.users();
  std::map<int32_t, Growth> growth;  // by state id
  for (const std::string& name : caches) {
    const auto s = g.find(name);
    if (!s || g.node(*s).op != graph::OpKind::State) {
      r.not_applied = fmt::format("the graph has no state '{}'", name);
      break;
    }
    Growth gr;
    r.not_applied = find_growth(g, users, *s, gr);
    if (!r.not_applied.empty()) break;
    growth[s->id] = gr;
  }
  const auto slot_value = g.find(slot);
  if (r.not_applied.empty() && (!slot_value || g.node(*slot_value).op != graph::OpKind::Input))
    r.not_applied = fmt::format("the graph has no input '{}' for the slot", slot);
  if (!r.not_applied.empty()) {
    r.graph = g;
    return r;
  }

  graph::Graph& out = r.graph;
  std::vector<Value> map(size_t(g.size()));
  std::map<int32_t, Value> updates;  // a cache state's id -> its write_at in `out`
  std::map<int32_t, int32_t> state_of_concat;
  std::set<int32_t> cache_casts;  // dropped: each one's only reader, the concat, is replaced
  for (const auto& [id, gr] : growth) {
    state_of_concat[gr.concat.id] = id;
    if (gr.cast.valid()) cache_casts.insert(gr.cast.id);
  }
  // The leaves first, in g's order: the slot may have been added after the nodes that will read it.
  for (Value v : g.values()) {
    const graph::Node& n = g.node(v);
    if (!graph::is_leaf(n.op)) continue;
    graph::TensorType type = n.type;
    if (const auto found = growth.find(v.id); found != growth.end())
      type.shape[size_t(found->second.axis)] = g.type(found->second.concat).shape[size_t(found->second.axis)];
    map[size_t(v.id)] = out.add_leaf(n.op, n.name, type, n.attrs);
  }
  for (Value v : g.values()) {
    const graph::Node& n = g.node(v);
    if (graph::is_leaf(n.op)) continue;
    if (const auto c = state_of_concat.find(v.id); c != state_of_concat.end()) {
      const Growth& gr = growth.at(c->second);
      const Value state = map[size_t(c->second)];
      Value row = map[size_t(n.inputs[1].id)];
      if (out.type(row).dtype != out.type(state).dtype) row = out.cast(row, out.type(state).dtype);
      const Value written = out.add_node(*graph::op_from_name("write_at"), {state, row, map[size_t(slot_value->id)]},
                                         {{"axis", gr.axis}}, n.name);
      updates[c->second] = written;
      map[size_t(v.id)] = n.type.dtype == out.type(written).dtype ? written : out.cast(written, n.type.dtype);
      continue;
    }
    if (cache_casts.count(v.id)) continue;
    std::vector<Value> inputs;
    for (Value in : n.inputs) inputs.push_back(map[size_t(in.id)]);
    map[size_t(v.id)] = out.add_node(n.op, std::move(inputs), n.attrs, n.name);
  }
  for (const graph::NamedOutput& o : g.outputs())
    if (!drop_outputs.count(o.name)) out.output(o.name, map[size_t(o.value.id)]);
  for (const graph::StateUpdate& u : g.state_updates())
    if (!growth.count(u.target.id)) out.state_update(map[size_t(u.target.id)], map[size_t(u.value.id)]);
  for (const auto& [id, written] : updates) out.state_update(map[size_t(id)], written);
  return r;
}

}  // namespace spire::passes
