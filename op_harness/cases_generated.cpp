// The cases of every pointwise op whose op table entry has a test domain: the same shapes for all of them
// (a [1], [7,33], [257], [2,3,5], and for several inputs broadcasting pairs: row, column x row, scalar), f32
// throughout, f64 once, i32/i64 where the entry says integers. A new pointwise op is covered by its entry alone.
#include "ir/graph/op_table.h"
#include "op_harness/cases.h"

namespace spire::harness {

namespace {

OpInput drawn(const graph::TestDomain& d, size_t k, DType t, Shape s) {
  graph::InputDomain r = k < d.inputs.size() ? d.inputs[k] : graph::InputDomain{};
  return in(t, std::move(s), r.away_from_zero ? Draw::AwayFromZero : Draw::Uniform, r.lo, r.hi);
}

OpInput whole_numbers(DType t, Shape s, double range) { return in(t, std::move(s), Draw::Integers, -range, range); }

std::string attrs_label(const graph::Attrs& attrs) {
  std::string s;
  for (const auto& [name, value] : attrs.items()) {
    std::string v = std::visit(
        [](const auto& x) -> std::string {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::vector<int64_t>>) return graph::shape_to_string(x);
          else return fmt::format("{}", x);
        },
        value);
    s += (s.empty() ? "" : " ") + name + "=" + v;
  }
  return s;
}

void cases_of(CaseList& cl, const graph::OpInfo& op) {
  const graph::TestDomain& d = op.test;
  const OpKind kind = op.kind;
  graph::Attrs attrs = d.attrs;
  Build build = [kind, attrs](Graph& g, const std::vector<Value>& x) { return g.add_node(kind, x, attrs); };
  const std::string label = attrs_label(attrs);
  // Same-shape tuples, then (for several inputs) broadcasting ones: each entry one shape per input.
  std::vector<std::vector<Shape>> shapes;
  auto all = [&](Shape s) { return std::vector<Shape>(size_t(op.arity), s); };
  if (op.arity == 1) {
    shapes = {{{1}}, {{7, 33}}, {{257}}, {{2, 3, 5}}};
  } else if (!d.broadcast) {
    shapes = {all({7, 33}), all({257})};
  } else {
    shapes = {all({7, 33}), all({1})};
    std::vector<Shape> row = all({7, 33}), outer = all({7, 33}), scalar = all({257}), mixed = all({2, 3, 5});
    row.back() = {33};
    outer.front() = {7, 1};
    outer.back() = {1, 33};
    scalar.back() = {};
    mixed.back() = {3, 1};
    for (auto& s : {row, outer, scalar, mixed}) shapes.push_back(s);
  }
  auto add = [&](DType t, const std::vector<Shape>& s, bool integers) {
    std::vector<OpInput> inputs;
    for (size_t k = 0; k < s.size(); ++k)
      inputs.push_back(integers ? whole_numbers(t, s[k], op.arity == 1 ? 50 : 1000) : drawn(d, k, t, s[k]));
    cl.add(kind, std::move(inputs), build, label, d.backward);
  };
  for (const auto& s : shapes) add(DType::F32, s, false);
  add(DType::F64, op.arity == 1 || !d.broadcast ? all({7, 33}) : shapes[2], false);
  if (d.integers) {
    add(DType::I32, op.arity == 1 ? all({7, 33}) : shapes[2], true);
    if (op.arity > 1) add(DType::I64, shapes[4], true);
  }
}

}  // namespace

void generated_pointwise_cases(CaseList& cl) {
  for (const graph::OpInfo& op : graph::op_table())
    if (op.test.generate) cases_of(cl, op);
}

}  // namespace spire::harness
