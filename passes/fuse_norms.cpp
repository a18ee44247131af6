#include "passes/fuse_norms.h"

#include <optional>

namespace spire::passes {

namespace {

using graph::Node;
using graph::Value;

// A mean over the last axis that keeps it.
bool over_last_axis(const Node& n) {
  return n.attrs.get_bool("keepdim") && n.attrs.get_ints("axes") == std::vector<int64_t>{n.type.rank() - 1};
}

// The square of the value captured as `name`: pow(v, 2) or v * v.
std::vector<Pattern> squares_of(const std::string& name) {
  return {op("pow", {same(name), constant(2)}).uses(1), op("mul", {same(name), same(name)}).uses(1)};
}

// A constant's single value (a scalar or a tensor of one element); nullopt otherwise.
std::optional<double> single_constant(const Node& n) {
  if (n.op != graph::OpKind::Constant || n.type.numel() != 1) return std::nullopt;
  return n.attrs.get_float("value");
}

// Whether `v` (of the match) is a vector of the normalized axis's length and x's dtype.
bool row_vector(const Match& m, const std::string& capture, const Node& x) {
  const Node& n = m.node(capture);
  return n.type.dtype == x.type.dtype && n.type.shape == graph::Shape{x.type.shape.back()};
}

Value build_norm(graph::Graph& g, const Match& m, bool center) {
  const Node& x = m.node("x");
  const std::optional<double> eps = single_constant(m.node("eps"));
  if (!eps || x.type.rank() < 1 || !row_vector(m, "scale", x) || (center && !row_vector(m, "bias", x))) return {};
  std::vector<Value> inputs{m["x"], m["scale"]};
  if (center) inputs.push_back(m["bias"]);
  return g.op(center ? "layer_norm" : "rms_norm", inputs, {{"epsilon", *eps}});
}

}  // namespace

std::vector<Rule> norm_rules() {
  std::vector<Rule> rules;
  for (Pattern square : squares_of("d")) {
    // d = x - mean(x), read by its square and the division (the square reads it twice when it is d * d).
    Pattern d = op("sub", {any("x"), op("mean", {same("x")}).where(over_last_axis).uses(1)}).as("d");
    Pattern stddev = op("sqrt", {op("add", {op("mean", {square}).where(over_last_axis).uses(1), any("eps")})
                                     .commutative()
                                     .uses(1)})
                         .uses(1);
    Pattern scaled = op("mul", {op("div", {d, stddev}).uses(1), any("scale")}).commutative().uses(1);
    rules.emplace_back("layer_norm", op("add", {scaled, any("bias")}).commutative(),
                       [](graph::Graph& g, const Match& m) { return build_norm(g, m, true); });
  }
  for (Pattern square : squares_of("x")) {
    Pattern root = op("sqrt", {op("add", {op("mean", {square}).where(over_last_axis).uses(1), any("eps")})
                                   .commutative()
                                   .uses(1)})
                       .uses(1);
    for (Pattern rsqrt : {op("reciprocal", {root}).uses(1), op("div", {constant(1), root}).uses(1)})
      rules.emplace_back("rms_norm",
                         op("mul", {any("scale"), op("mul", {any("x"), rsqrt}).commutative().uses(1)}).commutative(),
                         [](graph::Graph& g, const Match& m) { return build_norm(g, m, false); });
  }
  return rules;
}

graph::Graph fuse_norms(const graph::Graph& g) {
  static const std::vector<Rule> rules = norm_rules();
  return apply_rules(g, rules).graph;
}

}  // namespace spire::passes
