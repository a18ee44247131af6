#include "passes/decompose.h"
#include "passes/rebuild.h"

#include <limits>

namespace spire::passes {

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

}  // namespace spire::passes
