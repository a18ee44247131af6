// Issue 9's other example: relu(add(a, b)) replaced by one fused op. The fused op is meant to be a user's
// custom op, registered at run time; those are being built on main. Until then:
//   * add_relu_rule(make) is the rule with the replacement given by the caller, which the tests exercise
//     with a rebuild from built-in ops (maximum(add(a, b), 0)): the matching and rewriting machinery;
//   * rewrite_add_relu(g, name) is the call the custom-op tests make once an op of two inputs computing
//     relu(a + b) can be registered: every such pair becomes that ONE op.
#pragma once

#include <string>
#include <string_view>

#include "passes/rewrite.h"

namespace spire::passes::testing {

// relu(add(a, b)) where the add has exactly one use (the relu), so the rewrite computes nothing twice.
inline Rule add_relu_rule(Replace make) {
  return Rule("add_relu", op("relu", {op("add", {any("a"), any("b")}).uses(1)}), std::move(make));
}

inline RewriteResult rewrite_add_relu(const graph::Graph& g, std::string_view fused_op_name) {
  const std::string name(fused_op_name);
  return apply_rules(g, {add_relu_rule([name](graph::Graph& out, const Match& m) {
                       return out.op(name, {m["a"], m["b"]});
                     })});
}

}  // namespace spire::passes::testing
