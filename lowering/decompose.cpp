#include "lowering/decompose.h"

#include <limits>

#include <fmt/format.h>

namespace spire::lowering {

std::string fresh_name(const graph::Graph& original, const graph::Graph& out, const std::string& base) {
  std::string n = base;
  for (int k = 1; original.find(n) || out.find(n); ++k) n = fmt::format("{}_{}", base, k);
  return n;
}

graph::Graph rebuild(const graph::Graph& g, const NodeCopy& copy) {
  graph::Graph out;
  std::vector<graph::Value> map(size_t(g.size()));
  for (graph::Value v : g.values()) {
    const graph::Node& n = g.node(v);
    if (graph::is_leaf(n.op)) {
      map[size_t(v.id)] = out.add_leaf(n.op, n.name, n.type, n.attrs);
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

graph::Graph decompose(const graph::Graph& g) {
  using graph::OpKind;
  return rebuild(g, [&](graph::Graph& out, graph::Value v, std::vector<graph::Value> inputs,
                        const std::vector<graph::Value>&) {
    const graph::Node& n = g.node(v);
    if (n.op == OpKind::Mean) {
      // mean = sum * (1 / count): count is static, so the scale is a constant.
      const graph::Shape& in_shape = g.type(n.inputs[0]).shape;
      int64_t count = 1;
      for (int64_t a : n.attrs.get_ints("axes")) count *= in_shape[size_t(a)];
      graph::Attrs sum_attrs{{"axes", n.attrs.get_ints("axes")}, {"keepdim", n.attrs.get_bool("keepdim")}};
      graph::Value s = out.add_node(OpKind::Sum, inputs, sum_attrs, fresh_name(g, out, n.name + ".sum"));
      // An empty reduction (count 0) divides by zero, as the reference does: 0 * inf = nan.
      double scale = count == 0 ? std::numeric_limits<double>::infinity() : 1.0 / double(count);
      graph::Value c = out.add_leaf(OpKind::Constant, fresh_name(g, out, n.name + ".scale"), {n.type.dtype, {}},
                                    {{"value", scale}});
      return out.add_node(OpKind::Mul, {s, c}, {}, n.name);
    }
    return out.add_node(n.op, inputs, n.attrs, n.name);
  });
}

}  // namespace spire::lowering
