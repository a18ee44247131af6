// The op table: gathers the entries of every op family (ir/graph/ops/*.cpp), places the named ops at their
// OpKind and numbers the others after them, and checks the table once, at first use.
#include "ir/graph/op_table.h"

#include <fmt/format.h>

namespace spire::graph {
namespace {

void check_entry(const OpInfo& e) {
  auto bad = [&](const char* what) {
    throw std::logic_error(fmt::format("op table entry '{}': {}", e.name, what));
  };
  if (e.name.empty()) bad("has no name");
  const bool leaf = e.category == OpCategory::Leaf;
  if (leaf != (e.arity == 0)) bad("leaves and only leaves take no inputs");
  if (!leaf && !e.shape) bad("has no shape rule");
  if (e.category == OpCategory::Pointwise && (!e.scalar || !e.formula))
    bad("is pointwise but lacks its scalar reference or device formula");
  if (!leaf && e.category != OpCategory::Pointwise && !e.reference) bad("has no float64 reference");
  if (e.forward.why.empty() || e.backward.why.empty()) bad("gives no reason for its tolerance");
  if (e.category == OpCategory::Heavy && !e.cost) bad("is heavy but has no cost rule (its flops are its own)");
  if (e.test.generate && e.category != OpCategory::Pointwise) bad("only pointwise ops generate harness cases");
  if (e.arity >= 0 && e.test.inputs.size() > size_t(e.arity)) bad("its test domain has more inputs than the op");
}

std::vector<OpInfo> build_table() {
  std::vector<OpInfo> named(static_cast<size_t>(kNumNamedOps));
  std::vector<bool> placed(static_cast<size_t>(kNumNamedOps), false);
  std::vector<OpInfo> unnamed;
  for (auto family : {ops::leaves, ops::binary, ops::unary, ops::activations, ops::select_cast, ops::reductions, ops::layout, ops::indexing,
                      ops::heavy, ops::backward_only}) {
    for (OpInfo& e : family()) {
      check_entry(e);
      if (e.kind == kUnnamedOp) {
        unnamed.push_back(std::move(e));
        continue;
      }
      const size_t k = size_t(e.kind);
      if (k >= named.size() || placed[k]) throw std::logic_error(fmt::format("op '{}': bad or repeated OpKind", e.name));
      placed[k] = true;
      named[k] = std::move(e);
    }
  }
  for (size_t k = 0; k < placed.size(); ++k)
    if (!placed[k]) throw std::logic_error(fmt::format("OpKind {} has no op table entry", k));
  for (OpInfo& e : unnamed) {
    e.kind = OpKind(named.size());
    named.push_back(std::move(e));
  }
  for (size_t i = 0; i < named.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (named[i].name == named[j].name) throw std::logic_error(fmt::format("op name '{}' defined twice", named[i].name));
  return named;
}

const std::vector<OpInfo>& table() {
  static const std::vector<OpInfo> t = build_table();
  return t;
}

}  // namespace

const OpInfo& op_info(OpKind op) {
  const auto& t = table();
  if (size_t(op) >= t.size()) throw GraphError(fmt::format("op number {} is not in the op table", int(op)));
  return t[size_t(op)];
}
std::span<const OpInfo> op_table() { return table(); }
int op_count() { return int(table().size()); }
OpCategory op_category(OpKind op) { return op_info(op).category; }

double op_tolerance(OpKind op, bool backward, DType dtype) {
  if (!is_float(dtype)) return 0;
  const Tolerance& t = backward ? op_info(op).backward : op_info(op).forward;
  return dtype == DType::F64 ? t.f64 : t.f32;
}

std::string_view op_category_name(OpCategory c) {
  switch (c) {
    case OpCategory::Leaf: return "leaf";
    case OpCategory::Pointwise: return "pointwise";
    case OpCategory::Reduction: return "reduction";
    case OpCategory::Layout: return "layout";
    case OpCategory::Heavy: return "heavy";
  }
  return "?";
}

}  // namespace spire::graph
