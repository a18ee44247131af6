#include "op_harness/op_case.h"

namespace spire::harness {

void CaseList::add(graph::OpKind op, std::vector<OpInput> inputs, Build build, const std::string& attrs, bool backward) {
  std::string label;
  for (const auto& i : inputs) label += (label.empty() ? "" : ", ") + i.type.to_string();
  if (!attrs.empty()) label += " " + attrs;
  cases_.push_back({op, std::move(label), std::move(inputs), std::move(build), backward});
}

void CaseList::add(std::string_view op, std::vector<OpInput> inputs, graph::Attrs attrs, const std::string& label,
                   bool backward) {
  const std::optional<graph::OpKind> kind = graph::op_from_name(op);
  if (!kind) throw graph::GraphError("op harness case: unknown op '" + std::string(op) + "'");
  const graph::OpKind k = *kind;
  add(k, std::move(inputs), [k, attrs](graph::Graph& g, const std::vector<graph::Value>& x) { return g.add_node(k, x, attrs); },
      label, backward);
}

}  // namespace spire::harness
