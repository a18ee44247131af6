// Graph: node storage, naming, validation of new nodes, outputs, state updates and accessors.
#include "ir/graph/graph.h"

#include <algorithm>

#include <fmt/format.h>

#include "ir/graph/op_table.h"

namespace spire::graph {
namespace {

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9') || c == '.'; }

// Names are identifiers with dots ("convnet.0.weight"): the text form reads them without quoting.
void check_name(std::string_view name, std::string_view what) {
  bool ok = !name.empty() && is_name_start(name[0]);
  for (char c : name) ok = ok && is_name_char(c);
  if (!ok)
    throw GraphError(fmt::format("invalid {} name '{}': names start with a letter or '_' and contain only letters, "
                                 "digits, '_' and '.'",
                                 what, name));
}

const char* attr_kind_name(AttrKind k) {
  switch (k) {
    case AttrKind::Int: return "int";
    case AttrKind::Float: return "float";
    case AttrKind::Bool: return "bool";
    case AttrKind::Ints: return "int list";
    case AttrKind::String: return "string";
  }
  return "?";
}

// Puts `given` into the op's attribute order, checking that it has exactly the attributes the op takes.
Attrs normalize_attrs(const OpInfo& info, const Attrs& given) {
  Attrs out;
  for (const AttrSpec& spec : info.attrs) {
    if (!given.has(spec.name))
      throw GraphError(fmt::format("{}: missing attribute '{}' ({})", info.name, spec.name, attr_kind_name(spec.kind)));
    const AttrValue& v = given.get(spec.name);
    if (v.index() != size_t(spec.kind)) {
      // An int where a float is expected is a float (constant {value=1}).
      if (spec.kind == AttrKind::Float && std::holds_alternative<int64_t>(v)) {
        out.set(std::string(spec.name), double(std::get<int64_t>(v)));
        continue;
      }
      throw GraphError(fmt::format("{}: attribute '{}' must be a {}, got a {}", info.name, spec.name,
                                   attr_kind_name(spec.kind), attr_kind_name(AttrKind(v.index()))));
    }
    out.set(std::string(spec.name), v);
  }
  for (const auto& [name, value] : given.items()) {
    bool known = false;
    for (const AttrSpec& spec : info.attrs) known = known || spec.name == name;
    if (!known) throw GraphError(fmt::format("{}: unknown attribute '{}'", info.name, name));
  }
  return out;
}

}  // namespace

std::string Graph::generate_name(OpKind op) {
  for (;;) {
    std::string n = fmt::format("{}_{}", op_name(op), name_counter_++);
    if (!by_name_.contains(n)) return n;
  }
}

Value Graph::append(Node n) {
  if (by_name_.contains(n.name)) throw GraphError(fmt::format("duplicate value name '{}'", n.name));
  Value v{int32_t(nodes_.size())};
  by_name_.emplace(n.name, v.id);
  nodes_.push_back(std::move(n));
  return v;
}

Value Graph::add_node(OpKind op, std::vector<Value> inputs, Attrs attrs, std::string name) {
  const OpInfo& info = op_info(op);
  if (is_leaf(op)) throw GraphError(fmt::format("{} is a leaf: use add_leaf", info.name));
  if (info.arity < 0 ? inputs.empty() : int(inputs.size()) != info.arity)
    throw GraphError(info.arity < 0 ? fmt::format("{} takes one or more inputs, got none", info.name)
                                    : fmt::format("{} takes {} input(s), got {}", info.name, info.arity, inputs.size()));
  std::vector<TensorType> types;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].valid() || inputs[i].id >= size())
      throw GraphError(fmt::format("{}: input {} is not a value of this graph", info.name, i));
    types.push_back(nodes_[size_t(inputs[i].id)].type);
  }
  Node n;
  n.op = op;
  n.attrs = normalize_attrs(info, attrs);
  if (name.empty()) n.name = generate_name(op);
  else {
    check_name(name, "value");
    n.name = std::move(name);
  }
  if (by_name_.contains(n.name)) throw GraphError(fmt::format("duplicate value name '{}'", n.name));
  ShapeContext ctx{op, n.name, types, n.attrs};
  n.type = info.shape(ctx);
  n.inputs = std::move(inputs);
  return append(std::move(n));
}

Value Graph::op(std::string_view op_name_text, std::vector<Value> inputs, Attrs attrs) {
  std::optional<OpKind> op = op_from_name(op_name_text);
  if (!op) throw GraphError(fmt::format("unknown op '{}'", op_name_text));
  return add_node(*op, std::move(inputs), std::move(attrs));
}

Value Graph::add_leaf(OpKind op, std::string name, TensorType type, Attrs attrs) {
  const OpInfo& info = op_info(op);
  if (!is_leaf(op)) throw GraphError(fmt::format("{} is not a leaf: use add_node", info.name));
  for (int64_t d : type.shape)
    if (d < 0) throw GraphError(fmt::format("{} '{}': negative dimension in {}", info.name, name, type.to_string()));
  if (op == OpKind::State && !attrs.has("init")) attrs.set("init", 0.0);
  Node n;
  n.op = op;
  n.attrs = normalize_attrs(info, attrs);
  if (name.empty()) {
    if (op != OpKind::Constant) throw GraphError(fmt::format("a {} needs a name", info.name));
    n.name = generate_name(op);
  } else {
    check_name(name, info.name);
    n.name = std::move(name);
  }
  n.type = std::move(type);
  return append(std::move(n));
}

Value Graph::name(Value v, std::string new_name) {
  const Node& n = node(v);
  if (n.name == new_name) return v;
  check_name(new_name, "value");
  if (by_name_.contains(new_name)) throw GraphError(fmt::format("duplicate value name '{}'", new_name));
  by_name_.erase(by_name_.find(n.name));
  by_name_.emplace(new_name, v.id);
  nodes_[size_t(v.id)].name = std::move(new_name);
  return v;
}

void Graph::remove_output(std::string_view name) {
  const auto it = std::find_if(outputs_.begin(), outputs_.end(), [&](const NamedOutput& o) { return o.name == name; });
  if (it == outputs_.end()) throw GraphError(fmt::format("remove_output: '{}' is not an output", name));
  outputs_.erase(it);
}

void Graph::output(std::string name, Value v) {
  check_name(name, "output");
  node(v);  // validates v
  for (const NamedOutput& o : outputs_)
    if (o.name == name) throw GraphError(fmt::format("duplicate output name '{}'", name));
  for (const StateUpdate& u : updates_)
    if (node(u.target).name == name)
      throw GraphError(fmt::format("output name '{}' is the name of a state-update target; evaluate() reports the "
                                   "updated value under that name",
                                   name));
  outputs_.push_back({std::move(name), v});
}

void Graph::state_update(Value target, Value new_value) {
  const Node& t = node(target);
  const Node& v = node(new_value);
  if (t.op != OpKind::Parameter && t.op != OpKind::State)
    throw GraphError(fmt::format("state update target '{}' is a {}, not a parameter or state", t.name, op_name(t.op)));
  if (t.type != v.type)
    throw GraphError(fmt::format("state update of '{}' ({}) with '{}' of another type ({})", t.name,
                                 t.type.to_string(), v.name, v.type.to_string()));
  for (const StateUpdate& u : updates_)
    if (u.target == target) throw GraphError(fmt::format("'{}' already has a state update", t.name));
  for (const NamedOutput& o : outputs_)
    if (o.name == t.name)
      throw GraphError(fmt::format("state update target '{}' has the name of an output", t.name));
  updates_.push_back({target, new_value});
}

const Node& Graph::node(Value v) const {
  if (!v.valid() || v.id >= size())
    throw GraphError(fmt::format("value id {} is not in this graph ({} values)", v.id, size()));
  return nodes_[size_t(v.id)];
}

std::vector<Value> Graph::values() const {
  std::vector<Value> out;
  for (int32_t i = 0; i < size(); ++i) out.push_back({i});
  return out;
}

namespace {
std::vector<Value> of_kind(const std::vector<Node>& nodes, OpKind op) {
  std::vector<Value> out;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].op == op) out.push_back({int32_t(i)});
  return out;
}
}  // namespace

std::vector<Value> Graph::inputs() const { return of_kind(nodes_, OpKind::Input); }
std::vector<Value> Graph::parameters() const { return of_kind(nodes_, OpKind::Parameter); }
std::vector<Value> Graph::states() const { return of_kind(nodes_, OpKind::State); }

std::optional<Value> Graph::find(std::string_view name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return Value{it->second};
}

Value Graph::at(std::string_view name) const {
  auto v = find(name);
  if (!v) throw GraphError(fmt::format("no value named '{}'", name));
  return *v;
}

std::optional<Value> Graph::find_output(std::string_view name) const {
  for (const NamedOutput& o : outputs_)
    if (o.name == name) return o.value;
  return std::nullopt;
}

std::vector<std::vector<Value>> Graph::users() const {
  std::vector<std::vector<Value>> out(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i)
    for (Value in : nodes_[i].inputs) {
      auto& u = out[size_t(in.id)];
      if (u.empty() || u.back().id != int32_t(i)) u.push_back({int32_t(i)});
    }
  return out;
}

}  // namespace spire::graph
