// apply_rules(): sweeps that copy the graph node by node, building a rule's replacement where its pattern
// matches, then drop what became dead; repeated until a sweep replaces nothing.
#include "passes/rewrite.h"
#include "passes/rebuild.h"

#include <fmt/format.h>

#include "ir/graph/op_table.h"

namespace spire::passes {

using graph::Graph;
using graph::GraphError;
using graph::Node;
using graph::Value;

graph::Value Match::operator[](std::string_view capture) const {
  auto it = captures_.find(capture);
  if (it == captures_.end())
    throw GraphError(fmt::format("match at '{}': no capture named '{}'", root().name, capture));
  return it->second;
}

const graph::Node& Match::node(std::string_view capture) const {
  auto it = source_captures_.find(capture);
  if (it == source_captures_.end())
    throw GraphError(fmt::format("match at '{}': no capture named '{}'", root().name, capture));
  return source_.node(it->second);
}

Rule::Rule(std::string name_, Pattern pattern_, Replace replace_)
    : name(std::move(name_)), pattern(std::move(pattern_)), replace(std::move(replace_)) {
  check_pattern(pattern);
  if (pattern.kind() != Pattern::Kind::Op || graph::is_leaf(pattern.op()))
    throw GraphError(fmt::format("rule '{}': the pattern's root must be an op() of a non-leaf op, not {}", name,
                                 pattern.to_string()));
  if (!replace) throw GraphError(fmt::format("rule '{}' has no replacement", name));
}

int RewriteResult::total() const {
  int t = 0;
  for (int r : rewrites) t += r;
  return t;
}

namespace {

// Names what a replacement added: the result takes the root's name, the rest <root>.<op>.
void name_new_nodes(const Graph& source, Graph& out, int32_t first, Value result, const std::string& root_name) {
  for (int32_t id = first; id < out.size(); ++id) {
    if (id == result.id) continue;
    const Node& n = out.node(id);
    out.name(Value{id}, fresh_name(source, out, fmt::format("{}.{}", root_name, graph::op_name(n.op))));
  }
  if (result.valid() && result.id >= first) out.name(result, root_name);
}

struct Sweep {
  Graph out;
  std::vector<int> fired;  // per rule
  int count = 0;
};

// Tries the rules at one non-leaf node; returns the replacement, or an invalid Value when none applies.
Value try_rules(const Graph& g, Value v, const std::vector<Rule>& rules, const std::vector<int>& uses,
                const std::vector<Value>& map, Sweep& s) {
  const Node& n = g.node(v);
  for (size_t k = 0; k < rules.size(); ++k) {
    const Rule& rule = rules[k];
    if (rule.pattern.op() != n.op) continue;
    std::optional<Captures> found = match(rule.pattern, g, v, uses);
    if (!found) continue;
    Captures mapped;
    for (const auto& [name, value] : *found) mapped[name] = map[size_t(value.id)];
    const int32_t first = s.out.size();
    Value r;
    try {
      r = rule.replace(s.out, Match(g, v, *found, std::move(mapped)));
    } catch (const GraphError& e) {
      throw GraphError(fmt::format("rule '{}' at '{}': {}", rule.name, n.name, e.what()));
    }
    if (r.valid() && r.id >= s.out.size())
      throw GraphError(fmt::format("rule '{}' at '{}': the replacement (value {}) is not a value of the graph being "
                                   "built (only {} values)", rule.name, n.name, r.id, s.out.size()));
    if (r.valid() && s.out.type(r) != n.type)
      throw GraphError(fmt::format("rule '{}' at '{}': the replacement (a {}) is {}, the root is {} (a replacement "
                                   "computes exactly what its root does)",
                                   rule.name, n.name, graph::op_name(s.out.node(r).op), s.out.type(r).to_string(),
                                   n.type.to_string()));
    name_new_nodes(g, s.out, first, r, n.name);
    if (!r.valid()) continue;  // declined
    ++s.fired[k];
    ++s.count;
    return r;
  }
  return Value{};
}

Sweep sweep(const Graph& g, const std::vector<Rule>& rules) {
  Sweep s;
  s.fired.assign(rules.size(), 0);
  const std::vector<int> uses = use_counts(g);
  std::vector<Value> map(size_t(g.size()));
  for (Value v : g.values()) {
    const Node& n = g.node(v);
    if (graph::is_leaf(n.op)) {
      map[size_t(v.id)] = s.out.add_leaf(n.op, n.name, n.type, n.attrs);
      continue;
    }
    Value r = try_rules(g, v, rules, uses, map, s);
    if (!r.valid()) {
      std::vector<Value> inputs;
      for (Value in : n.inputs) inputs.push_back(map[size_t(in.id)]);
      r = s.out.add_node(n.op, std::move(inputs), n.attrs, n.name);
    }
    map[size_t(v.id)] = r;
  }
  for (const graph::NamedOutput& o : g.outputs()) s.out.output(o.name, map[size_t(o.value.id)]);
  for (const graph::StateUpdate& u : g.state_updates())
    s.out.state_update(map[size_t(u.target.id)], map[size_t(u.value.id)]);
  return s;
}

}  // namespace

Graph remove_dead_nodes(const Graph& g) {
  std::vector<bool> live(size_t(g.size()), false);
  for (const graph::NamedOutput& o : g.outputs()) live[size_t(o.value.id)] = true;
  for (const graph::StateUpdate& u : g.state_updates()) live[size_t(u.value.id)] = live[size_t(u.target.id)] = true;
  for (int32_t id = g.size() - 1; id >= 0; --id) {
    const Node& n = g.node(id);
    if (n.op == graph::OpKind::Input || n.op == graph::OpKind::Parameter || n.op == graph::OpKind::State)
      live[size_t(id)] = true;
    if (live[size_t(id)])
      for (Value in : n.inputs) live[size_t(in.id)] = true;
  }
  Graph out;
  std::vector<Value> map(size_t(g.size()));
  for (Value v : g.values()) {
    if (!live[size_t(v.id)]) continue;
    const Node& n = g.node(v);
    if (graph::is_leaf(n.op)) {
      map[size_t(v.id)] = out.add_leaf(n.op, n.name, n.type, n.attrs);
      continue;
    }
    std::vector<Value> inputs;
    for (Value in : n.inputs) inputs.push_back(map[size_t(in.id)]);
    map[size_t(v.id)] = out.add_node(n.op, std::move(inputs), n.attrs, n.name);
  }
  for (const graph::NamedOutput& o : g.outputs()) out.output(o.name, map[size_t(o.value.id)]);
  for (const graph::StateUpdate& u : g.state_updates())
    out.state_update(map[size_t(u.target.id)], map[size_t(u.value.id)]);
  return out;
}

RewriteResult apply_rules(const Graph& g, const std::vector<Rule>& rules, const RewriteOptions& opt) {
  RewriteResult result;
  result.rewrites.assign(rules.size(), 0);
  Graph current;
  const Graph* from = &g;
  for (;;) {
    Sweep s = sweep(*from, rules);
    if (s.count == 0) break;
    if (result.sweeps == opt.max_sweeps) {
      std::string still;
      for (size_t k = 0; k < rules.size(); ++k)
        if (s.fired[k]) still += fmt::format("{}'{}'", still.empty() ? "" : ", ", rules[k].name);
      throw GraphError(fmt::format("rewrite: no fixed point after {} sweeps (still matching: {}); does one rule undo "
                                   "another, or build what its own pattern matches?",
                                   opt.max_sweeps, still));
    }
    for (size_t k = 0; k < rules.size(); ++k) result.rewrites[k] += s.fired[k];
    ++result.sweeps;
    current = remove_dead_nodes(s.out);
    from = &current;
  }
  result.graph = result.sweeps == 0 ? g : std::move(current);
  return result;
}

}  // namespace spire::passes
