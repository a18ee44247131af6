// Attrs: the ordered attribute list of a node, and typed option structs read back from nodes.
#include <fmt/format.h>

#include "ir/graph/graph.h"

namespace spire::graph {

void Attrs::set(std::string name, AttrValue value) {
  for (auto& [n, v] : items_)
    if (n == name) { v = std::move(value); return; }
  items_.emplace_back(std::move(name), std::move(value));
}

bool Attrs::has(std::string_view name) const {
  for (const auto& item : items_)
    if (item.first == name) return true;
  return false;
}

const AttrValue& Attrs::get(std::string_view name) const {
  for (const auto& item : items_)
    if (item.first == name) return item.second;
  throw GraphError(fmt::format("missing attribute '{}'", name));
}

namespace {
const char* kind_name(size_t index) {
  static const char* names[] = {"int", "float", "bool", "int list", "string"};
  return index < 5 ? names[index] : "?";
}

template <class T, AttrKind K>
const T& typed(const Attrs& a, std::string_view name) {
  const AttrValue& v = a.get(name);
  if (const T* p = std::get_if<T>(&v)) return *p;
  throw GraphError(fmt::format("attribute '{}' is a {}, expected a {}", name, kind_name(v.index()),
                               kind_name(size_t(K))));
}
}  // namespace

int64_t Attrs::get_int(std::string_view name) const { return typed<int64_t, AttrKind::Int>(*this, name); }
double Attrs::get_float(std::string_view name) const { return typed<double, AttrKind::Float>(*this, name); }
bool Attrs::get_bool(std::string_view name) const { return typed<bool, AttrKind::Bool>(*this, name); }
const std::vector<int64_t>& Attrs::get_ints(std::string_view name) const {
  return typed<std::vector<int64_t>, AttrKind::Ints>(*this, name);
}
const std::string& Attrs::get_string(std::string_view name) const {
  return typed<std::string, AttrKind::String>(*this, name);
}

Conv2dOptions conv2d_options(const Node& n) {
  Conv2dOptions o;
  o.stride = n.attrs.get_ints("stride");
  o.padding = n.attrs.get_ints("padding");
  o.dilation = n.attrs.get_ints("dilation");
  o.groups = n.attrs.get_int("groups");
  return o;
}

Pool2dOptions pool2d_options(const Node& n) {
  Pool2dOptions o;
  o.kernel = n.attrs.get_ints("kernel");
  o.stride = n.attrs.get_ints("stride");
  o.padding = n.attrs.get_ints("padding");
  return o;
}

}  // namespace spire::graph
