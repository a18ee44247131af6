#include "diff/cut.h"

#include <algorithm>
#include <set>
#include <span>
#include <stdexcept>

#include <fmt/format.h>

#include "io/file_bytes.h"
#include "io/tensor_file.h"
#include "ir/graph/text_form.h"

namespace spire::diff {

using graph::Graph;
using graph::OpKind;
using graph::Value;

Cut cut_graph(const Graph& g, const std::vector<Value>& nodes, const std::map<std::string, graph::Tensor>& feeds,
              const Capture& reference) {
  const std::set<Value> kept(nodes.begin(), nodes.end());
  Cut cut;
  std::map<Value, Value> mapped;  // a value of g -> the cut's value
  // A value read from outside the cut: a leaf stays the leaf it is; a computed value becomes an input fed with its
  // reference value.
  auto outside = [&](Value v) {
    if (auto it = mapped.find(v); it != mapped.end()) return it->second;
    const graph::Node n = g.node(v);
    Value made;
    if (graph::is_leaf(n.op)) {
      made = cut.graph.add_leaf(n.op, n.name, n.type, n.attrs);
      if (n.op == OpKind::Input || n.op == OpKind::Parameter) cut.feeds[n.name] = feeds.at(n.name);
    } else {
      made = cut.graph.input(n.name, n.type.dtype, n.type.shape);
      const graph::Tensor& value = reference.values.at(n.name);
      if (value.type() != n.type)
        throw std::runtime_error(fmt::format("the reference value of '{}' is {}, the graph says {}", n.name,
                                             value.type().to_string(), n.type.to_string()));
      cut.feeds[n.name] = value;
      cut.boundary.push_back(n.name);
    }
    mapped[v] = made;
    return made;
  };
  for (Value v : kept) {  // std::set<Value> iterates by id: topological order
    const graph::Node n = g.node(v);
    if (graph::is_leaf(n.op)) throw std::invalid_argument(fmt::format("cut_graph: '{}' is a leaf", n.name));
    std::vector<Value> args;
    for (Value in : n.inputs) args.push_back(kept.count(in) ? mapped.at(in) : outside(in));
    mapped[v] = cut.graph.add_node(n.op, std::move(args), n.attrs, n.name);
  }
  const auto users = g.users();
  for (Value v : kept) {
    const auto& us = users[size_t(v.id)];
    const bool read_inside = std::any_of(us.begin(), us.end(), [&](Value u) { return kept.count(u) > 0; });
    if (!read_inside) cut.graph.output(g.node(v).name, mapped.at(v));
  }
  return cut;
}

CutFiles CutFiles::beside(const std::filesystem::path& graph_file) {
  std::filesystem::path stem = graph_file;
  stem.replace_extension();
  return {graph_file, stem.string() + ".safetensors", stem.string() + ".inputs.safetensors"};
}

void save_cut(const Cut& cut, const CutFiles& files) {
  io::NamedTensors weights, inputs;
  for (const graph::Node& n : cut.graph.nodes()) {
    if (n.op == OpKind::Parameter) weights.emplace_back(n.name, cut.feeds.at(n.name));
    if (n.op == OpKind::Input) inputs.emplace_back(n.name, cut.feeds.at(n.name));
  }
  io::save_tensors(files.weights, weights);
  io::save_tensors(files.inputs, inputs);
  const std::string text = graph::print(cut.graph);
  io::write_file_bytes_atomically(files.graph, std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

std::vector<Value> ancestors_and_self(const Graph& g, Value v) {
  std::set<Value> seen{v};
  std::vector<Value> todo{v};
  while (!todo.empty()) {
    const Value at = todo.back();
    todo.pop_back();
    for (Value in : g.node(at).inputs)
      if (!graph::is_leaf(g.node(in).op) && seen.insert(in).second) todo.push_back(in);
  }
  return {seen.begin(), seen.end()};
}

}  // namespace spire::diff
