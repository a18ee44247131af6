// Issue 9's other example: relu(add(a, b)) replaced by one fused op. The fused op is meant to be a user's
// custom op, registered at run time (on main: examples/custom_ops/add_relu.op, "seed_add_relu"); this
// branch has no run-time ops yet. So:
//   * add_relu_rule(make) is the rule with the replacement given by the caller, which the tests exercise
//     with a rebuild from built-in ops (maximum(add(a, b), 0)): the matching and rewriting machinery;
//   * rewrite_add_relu(g, name) is the call the custom-op tests make with the registered op's name: every
//     such pair becomes that ONE op.
#pragma once

#include <string>
#include <string_view>

#include "passes/rewrite.h"

namespace spire::passes::testing {

// relu(add(a, b)) where the add has exactly one use (the relu), so the rewrite computes nothing twice.
inline Rule add_relu_rule(Replace make) {
  return Rule("add_relu", op("relu", {op("add", {any("a"), any("b")}).uses(1)}), std::move(make));
}

// A custom op's kernel may index every input at the result's index (main's CustomOp::elementwise), so the
// operands are broadcast to the result's shape first. A pair the op cannot take (a dtype its kernel is not
// written for) is declined and stays as it was.
inline RewriteResult rewrite_add_relu(const graph::Graph& g, std::string_view fused_op_name) {
  const std::string name(fused_op_name);
  if (!graph::op_from_name(name)) throw graph::GraphError("rewrite_add_relu: no op named '" + name + "'");
  return apply_rules(g, {add_relu_rule([name](graph::Graph& out, const Match& m) -> graph::Value {
                       const graph::Shape& shape = m.root().type.shape;
                       graph::Value a = m["a"], b = m["b"];
                       if (out.type(a).shape != shape) a = out.broadcast_to(a, shape);
                       if (out.type(b).shape != shape) b = out.broadcast_to(b, shape);
                       try {
                         return out.op(name, {a, b});
                       } catch (const graph::GraphError&) {
                         return {};
                       }
                     })});
}

}  // namespace spire::passes::testing
