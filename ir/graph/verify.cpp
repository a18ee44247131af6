// verify(): the builder's invariants re-checked on a finished graph (see verify.h for the list).
#include "ir/graph/verify.h"

#include <set>

#include <fmt/format.h>

#include "ir/graph/op_table.h"

namespace spire::graph {
namespace {

// The text form's NAME (printer.cpp): what the parser reads back without quoting.
bool valid_name(std::string_view s) {
  auto start = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  auto rest = [&](char c) { return start(c) || (c >= '0' && c <= '9') || c == '.'; };
  if (s.empty() || !start(s[0])) return false;
  for (char c : s)
    if (!rest(c)) return false;
  return true;
}

const char* kind_name(size_t index) {
  static const char* names[] = {"int", "float", "bool", "int list", "string"};
  return index < 5 ? names[index] : "?";
}

// "node 4 'y' (add)": how every node problem starts.
std::string where(int32_t id, const Node& n, const OpInfo* info) {
  return fmt::format("node {} '{}' ({})", id, n.name, info ? info->name : std::string_view("unknown op"));
}

std::string check_attrs(const Node& n, const OpInfo& info) {
  const auto& items = n.attrs.items();
  for (size_t i = 0; i < info.attrs.size(); ++i) {
    const AttrSpec& spec = info.attrs[i];
    if (i >= items.size()) return fmt::format("lacks attribute '{}' ({})", spec.name, kind_name(size_t(spec.kind)));
    if (items[i].first != spec.name)
      return fmt::format("has attribute '{}' where its op has '{}' (attributes are exactly the op's, in its order)",
                         items[i].first, spec.name);
    if (items[i].second.index() != size_t(spec.kind))
      return fmt::format("attribute '{}' is a {}, its op takes a {}", spec.name, kind_name(items[i].second.index()),
                         kind_name(size_t(spec.kind)));
  }
  if (items.size() > info.attrs.size())
    return fmt::format("has attribute '{}', which its op does not take", items[info.attrs.size()].first);
  return "";
}

std::string check_node(const Graph& g, int32_t id) {
  const Node& n = g.nodes()[size_t(id)];
  if (size_t(n.op) >= size_t(op_count())) return fmt::format("{}: op number {} is not in the op table", where(id, n, nullptr), int(n.op));
  const OpInfo& info = op_info(n.op);
  const std::string at = where(id, n, &info);

  const bool arity_ok = info.arity < 0 ? !n.inputs.empty() : n.inputs.size() == size_t(info.arity);
  if (!arity_ok)
    return fmt::format("{}: has {} input(s), its op takes {}", at, n.inputs.size(),
                       info.arity < 0 ? std::string("one or more") : std::to_string(info.arity));
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const Value in = n.inputs[i];
    if (!in.valid() || in.id >= g.size())
      return fmt::format("{}: input {} is value {}, which is not in the graph ({} values)", at, i, in.id, g.size());
    if (in.id >= id)
      return fmt::format("{}: input {} is '{}' (node {}), which is not defined before its use (topological order)", at,
                         i, g.nodes()[size_t(in.id)].name, in.id);
  }

  if (std::string a = check_attrs(n, info); !a.empty()) return fmt::format("{}: {}", at, a);

  if (!valid_name(n.name)) return fmt::format("{}: '{}' is not a valid value name", at, n.name);
  const std::optional<Value> found = g.find(n.name);
  if (!found || found->id != id)
    return fmt::format("{}: the name '{}' is {} (names are unique and index their node)", at, n.name,
                       found ? fmt::format("also node {}'s", found->id) : std::string("not in the graph's name index"));

  if (is_leaf(n.op)) {
    for (int64_t d : n.type.shape)
      if (d < 0) return fmt::format("{}: negative dimension in {}", at, n.type.to_string());
    return "";
  }
  std::vector<TensorType> types;
  for (Value in : n.inputs) types.push_back(g.nodes()[size_t(in.id)].type);
  TensorType expected;
  try {
    expected = info.shape(ShapeContext{n.op, n.name, types, n.attrs});
  } catch (const GraphError& e) {
    return fmt::format("{}: its inputs do not fit its op: {}", at, e.what());
  }
  if (expected != n.type)
    return fmt::format("{}: type {} differs from its shape rule's {}", at, n.type.to_string(), expected.to_string());
  return "";
}

std::string check_outputs_and_updates(const Graph& g) {
  auto in_graph = [&](Value v) { return v.valid() && v.id < g.size(); };
  std::set<std::string, std::less<>> target_names;
  std::set<int32_t> targets;
  for (size_t i = 0; i < g.state_updates().size(); ++i) {
    const StateUpdate& u = g.state_updates()[i];
    if (!in_graph(u.target) || !in_graph(u.value))
      return fmt::format("state update {}: {} value {} is not in the graph", i, in_graph(u.target) ? "new" : "target",
                         in_graph(u.target) ? u.value.id : u.target.id);
    const Node& t = g.node(u.target);
    const Node& v = g.node(u.value);
    if (t.op != OpKind::Parameter && t.op != OpKind::State)
      return fmt::format("state update of '{}': the target is a {}, not a parameter or state", t.name, op_name(t.op));
    if (t.type != v.type)
      return fmt::format("state update of '{}' ({}) with '{}' of another type ({})", t.name, t.type.to_string(), v.name,
                         v.type.to_string());
    if (!targets.insert(u.target.id).second) return fmt::format("state update of '{}': updated twice", t.name);
    target_names.insert(t.name);
  }
  std::set<std::string, std::less<>> names;
  for (const NamedOutput& o : g.outputs()) {
    if (!valid_name(o.name)) return fmt::format("output '{}': not a valid output name", o.name);
    if (!in_graph(o.value)) return fmt::format("output '{}': value {} is not in the graph", o.name, o.value.id);
    if (!names.insert(o.name).second) return fmt::format("output '{}': the name is used twice", o.name);
    if (target_names.contains(o.name))
      return fmt::format("output '{}': the name of a state-update target (evaluate() reports the update under it)",
                         o.name);
  }
  return "";
}

}  // namespace

std::string verify(const Graph& g) {
  for (int32_t id = 0; id < g.size(); ++id)
    if (std::string problem = check_node(g, id); !problem.empty()) return problem;
  return check_outputs_and_updates(g);
}

void verify_or_throw(const Graph& g, std::string_view context) {
  if (std::string problem = verify(g); !problem.empty()) throw GraphError(fmt::format("{}: {}", context, problem));
}

}  // namespace spire::graph
